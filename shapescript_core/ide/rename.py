"""Rename, with its checks: the symbol at the cursor renamed everywhere it is used
(references.py finds the places), or the one reason it is refused: the new name is not
a name, is reserved, or would meet a name already there (the program would change)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from ..check.builtins import BUILTINS
from ..syntax import ast as A
from ..syntax.lexer import KEYWORDS
from .locate import item_at
from .references import RESERVED_TYPES, Occurrence, find_references, item_occurrences, occurrence_at

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class TextEdit:
    path: str
    start: int
    end: int
    text: str


@dataclass
class RenameResult:
    """Either the edits, per file (sorted), or why the rename is refused."""

    edits: dict  # path -> [TextEdit]
    error: Optional[str] = None


def _not_renamable(name: str) -> Optional[str]:
    if name in BUILTINS:
        return f"`{name}` is a builtin: it can't be renamed"
    if name in KEYWORDS:
        return f"`{name}` is a keyword: it can't be renamed"
    if name in RESERVED_TYPES:
        return f"`{name}` is a builtin type: it can't be renamed"
    return None


def prepare_rename(ws, path: str, offset: int):
    """(start, end, name) of the name to rename at `offset`, or a message saying why
    nothing there can be renamed (a str)."""
    occ = occurrence_at(ws, path, offset)
    if occ is None:
        word = _word_at(ws, path, offset)
        if word and _not_renamable(word):
            return _not_renamable(word)
        return "there is no name to rename here"
    return occ.start, occ.end, occ.name


def _word_at(ws, path: str, offset: int) -> str:
    f = ws.file(path)
    if f is None:
        return ""
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", f.text[max(0, offset - 64):offset + 64]):
        s = max(0, offset - 64) + m.start()
        if s <= offset <= s + len(m.group()):
            return m.group()
    return ""


def check_new_name(new: str) -> Optional[str]:
    if not IDENT.match(new):
        return f"`{new}` is not a name: a name is a letter or `_`, then letters, digits or `_`"
    if new in KEYWORDS:
        return f"`{new}` is a keyword"
    if new in BUILTINS:
        return f"`{new}` is a builtin's name"
    if new in RESERVED_TYPES:
        return f"`{new}` is a builtin type"
    return None


def rename(ws, path: str, offset: int, new: str) -> RenameResult:
    """The edits that rename the symbol at `offset` to `new` everywhere it is used, or
    the reason it is refused: `new` is not a name, is reserved, or would collide with a
    name that is already there (the meaning of the program would change)."""
    occ = occurrence_at(ws, path, offset)
    if occ is None:
        prep = prepare_rename(ws, path, offset)
        return RenameResult({}, prep if isinstance(prep, str) else "there is no name to rename here")
    bad = check_new_name(new)
    if bad:
        return RenameResult({}, f"can't rename `{occ.name}` to `{new}`: {bad}")
    if new == occ.name:
        return RenameResult({})
    refs = find_references(ws, occ.key, occ.name)
    clash = _collision(ws, occ, refs, new)
    if clash:
        return RenameResult({}, f"can't rename `{occ.name}` to `{new}`: {clash}")
    edits: dict = {}
    for o in refs:
        edits.setdefault(o.path, []).append(TextEdit(o.path, o.start, o.end, new))
    return RenameResult(edits)


def _collision(ws, occ: Occurrence, refs: list, new: str) -> Optional[str]:
    kind = occ.key[0]
    items = {}  # (path, item offset) -> (analysis, item) of every item the rename edits
    for o in refs:
        a = ws.analyze(o.path)
        it = item_at(a.file, o.start) if a is not None else None
        if it is not None:
            items[(o.path, it.offset)] = (a, it)
    if kind == "item":
        for p in [occ.key[1]] + sorted({o.path for o in refs} - {occ.key[1]}):  # its own file first
            a = ws.analyze(p)
            other = a.visible.get(new) if a is not None else None
            if other is not None:
                where = "" if other.path == p else f" (imported from `{_base(other.path)}`)"
                return f"`{new}` is already defined{where}"
    if kind == "field":
        a = ws.analyze(occ.key[1])
        model = next((it for it in a.file.items if it.offset + it.name_pos[0] == occ.key[2]), None) if a else None
        if isinstance(model, A.ModelItem) and any(fd.name == new for fd in model.fields):
            return f"`{model.name}` already has a field `{new}`"
        return None
    if kind == "svar":
        a = ws.analyze(occ.key[1])
        if a is not None and a.env.dims.is_dim(new):
            return f"`{new}` is a dim: the size variable would become that dim"
    # a parameter, local or size variable (or a global used in a function) must not
    # meet a name the function already uses: it would now mean the other thing
    for a, it in items.values():
        if kind in ("item",) and not isinstance(it, A.FnItem):
            continue
        if kind in ("local", "svar") and ("local", it.path, it.offset) != occ.key[:3] and \
                ("svar", it.path, it.offset) != occ.key[:3]:
            continue  # a call site's keyword argument: the callee's names are what matter
        for o in item_occurrences(a, it):
            if o.name == new:
                what = "" if it.name is None else f" in `{it.name}`"
                return f"`{new}` is already used{what}"
    return None


def _base(path: str) -> str:
    return os.path.basename(path)
