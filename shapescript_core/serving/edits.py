"""Small text-editing helpers for the quick fixes: whole lines, indentation, free names."""
from __future__ import annotations

import re

from ..diagnostics import Edit
from ..syntax import ast as A
from .places import file_span


def file_text(prog, item) -> str:
    f = prog.db.file(item.path)
    return f.text if f is not None else ""


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """The offset just past the newline ending the line at offset."""
    i = text.find("\n", offset)
    return len(text) if i < 0 else i + 1


def indent_at(text: str, offset: int) -> str:
    start = line_start(text, offset)
    return text[start:offset] if not text[start:offset].strip() else ""


def delete_statements(prog, item, stmts: list) -> list:
    """Edits deleting the lines of statements; a blank line left doubled goes too."""
    text = file_text(prog, item)
    ranges = sorted((line_start(text, item.offset + s.pos[0]), line_end(text, item.offset + s.pos[1]))
                    for s in stmts)
    merged: list = []
    for a, b in ranges:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    edits = []
    for a, b in merged:
        before = text[line_start(text, a - 1):a] if a > 0 else "x"
        after = text[b:line_end(text, b)]
        if not before.strip() and not after.strip() and b < len(text):
            b = line_end(text, b)
        edits.append(Edit(file_span(item.path, a, b), ""))
    return edits


def used_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


def is_ident(s: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) is not None


def name_uses(item, name: str) -> list:
    """Every Name node reading `name` in a function's body."""
    out = []
    for s in A.walk_stmts(item.body):
        roots = [s.iter] if isinstance(s, A.For) else [s.value]
        for r in roots:
            out += [n for n in A.walk_expr(r) if isinstance(n, A.Name) and n.id == name]
    return out


def assignments(item, name: str) -> list:
    out = []
    for s in A.walk_stmts(item.body):
        if isinstance(s, A.Assign) and s.target == name:
            out.append(s)
        elif isinstance(s, A.TupleAssign) and any(n == name for n, _ in s.targets):
            out.append(s)
        elif isinstance(s, A.For) and s.var == name:
            out.append(s)
    return out
