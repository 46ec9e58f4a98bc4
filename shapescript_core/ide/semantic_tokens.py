"""Semantic tokens: what each name is (dim, model, field, function, builtin, local,
parameter, size variable), plus keywords, comments, numbers and strings, so an editor
with no grammar for the language still colours it.

Tokens are made per item, relative to the item's start, and kept while the item, its
check and the dims stay the same: after an edit only the edited item is redone. The
text between items (comments) is lexed each time.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from ..check.builtins import BUILTINS
from ..check.types import DTYPE_NAMES
from ..syntax import ast as A
from ..syntax.lexer import CONTEXTUAL, KEYWORDS as LEXER_KEYWORDS
from .locate import binding_of, fn_result, walk

TYPES = ["keyword", "comment", "string", "number", "type", "parameter", "variable", "property",
         "function", "typeParameter", "decorator"]
MODIFIERS = ["declaration", "readonly", "defaultLibrary"]
KEYWORDS = set(LEXER_KEYWORDS) | set(CONTEXTUAL)  # the language's keywords: the lexer's lists
_LEX = re.compile(r'(?P<comment>#[^\n]*)|(?P<string>"[^"\n]*"?)|(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)'
                  r'|(?P<name>[A-Za-z_][A-Za-z0-9_]*)')
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # item -> (check, dims, tokens)


@dataclass(frozen=True)
class Token:
    start: int  # offsets: absolute, or relative to an item in `chunks`
    end: int
    type: str
    modifiers: tuple = ()


def _names(a, item) -> dict:
    """item-relative offset -> (type, modifiers) for the names of one item."""
    env = a.env
    out: dict = {}

    def put(pos, typ, *mods):
        out[pos[0]] = (typ, mods)

    if item.name:
        kind = item.declared_kind if isinstance(item, A.BrokenItem) else item.kind
        typ = {"dim": "variable", "model": "type", "fn": "function"}.get(kind)
        if typ:
            put(item.name_pos, typ, "declaration", *(("readonly",) if kind == "dim" else ()))
    res = fn_result(a, item)
    params = {p.name_pos for p in item.params} if isinstance(item, A.FnItem) else set()
    calls = set()
    for n in walk(item):  # a parent comes before its children
        if isinstance(n, A.Call):
            calls.add(id(n.func))
        elif isinstance(n, A.Param):
            put(n.name_pos, "parameter", "declaration")
        elif isinstance(n, A.Field):
            put(n.name_pos, "property", "declaration")
        elif isinstance(n, A.Assign):
            put(n.target_pos, "variable", "declaration")
        elif isinstance(n, A.TupleAssign):
            for _, pos in n.targets:
                put(pos, "variable", "declaration")
        elif isinstance(n, A.For):
            if n.index is not None:
                put(n.index_pos, "variable", "declaration")
            put(n.var_pos, "variable", "declaration")
        elif isinstance(n, A.FieldRead):
            put(n.name_pos, "property")
        elif isinstance(n, A.Decorator):
            put((n.pos[0] + 1, n.pos[0] + 1 + len(n.name)), "decorator")
        elif isinstance(n, A.Arg) and n.name:
            put((n.pos[0], n.pos[0] + len(n.name)), "parameter")
        elif isinstance(n, A.Name):
            if id(n) in calls:
                put(n.pos, "function", *(("defaultLibrary",) if n.id in BUILTINS else ()))
                continue
            b = binding_of(res, n.id, n.pos[0])
            if b is not None:
                put(n.pos, "parameter" if b[1] in params else "variable")
            elif env.dims.is_dim(n.id):
                put(n.pos, "variable", "readonly")
            elif n.id in DTYPE_NAMES:
                put(n.pos, "type", "defaultLibrary")
            elif res is not None and n.id in res.svars:
                put(n.pos, "typeParameter")
        elif isinstance(n, (A.SName, A.PName)):
            if env.dims.is_dim(n.name):
                put(n.pos, "variable", "readonly")
            else:
                put(n.pos, "typeParameter")
        elif isinstance(n, (A.NamedTypeExpr, A.DtypeExpr)):
            end = n.pos[0] + len(n.name)
            if n.name in DTYPE_NAMES or n.name == "Index":
                put((n.pos[0], end), "type", "defaultLibrary")
            else:
                put((n.pos[0], end), "type")
    return out


def _lex(text: str, names: dict) -> tuple:
    out = []
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        s, e = m.start(), m.end()
        if kind == "name":
            hit = names.get(s)
            if hit is not None:
                out.append(Token(s, e, hit[0], hit[1]))
            elif m.group() in KEYWORDS:
                out.append(Token(s, e, "keyword"))
        else:
            out.append(Token(s, e, kind))
    return tuple(out)


def item_tokens(a, item, dims_key=None) -> tuple:
    """The tokens of one item, relative to its start; the same tuple while nothing they
    depend on changed."""
    res = fn_result(a, item)
    if type(item) is A.DimItem:  # a simple dim's line (no weak reference): lexed again, as fast as a look-up
        return _lex(item.text, _names(a, item))
    if dims_key is None:
        dims_key = tuple(a.env.dims.items)
    hit = _CACHE.get(item)
    if hit is not None and hit[0] is res and hit[1] == dims_key:
        return hit[2]
    toks = _lex(item.text, _names(a, item))
    _CACHE[item] = (res, dims_key, toks)
    return toks


def chunks(ws, path: str) -> list:
    """[(start, text, tokens relative to start)] covering the file in order: each item,
    and the text between items. Every chunk starts at the start of a line."""
    a = ws.analyze(path)
    if a is None:
        return []
    text = a.file.text
    dims_key = tuple(a.env.dims.items)
    out = []
    pos = 0
    for item in a.file.items:
        if item.offset > pos:
            gap = text[pos:item.offset]
            out.append((pos, gap, _lex(gap, {})))
        out.append((item.offset, item.text, item_tokens(a, item, dims_key)))
        pos = item.offset + len(item.text)
    if pos < len(text):
        out.append((pos, text[pos:], _lex(text[pos:], {})))
    return out


def semantic_tokens(ws, path: str) -> list:
    """Every token of the file, with absolute offsets, in order."""
    return [Token(base + t.start, base + t.end, t.type, t.modifiers)
            for base, _, toks in chunks(ws, path) for t in toks]
