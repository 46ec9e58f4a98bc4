"""Semantic tokens: what each name is (dim, model, field, function, builtin, local,
parameter, size variable), plus keywords, comments, numbers and strings, so an editor
with no grammar for the language still colours it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..check.builtins import BUILTINS
from ..check.types import DTYPE_NAMES
from ..syntax import ast as A
from .locate import binding_of, fn_result, walk

TYPES = ["keyword", "comment", "string", "number", "type", "parameter", "variable", "property",
         "function", "typeParameter", "decorator"]
MODIFIERS = ["declaration", "readonly", "defaultLibrary"]
KEYWORDS = {"dim", "model", "fn", "import", "return", "for", "in", "and", "or", "not", "true", "false", "inf"}
_LEX = re.compile(r'(?P<comment>#[^\n]*)|(?P<string>"[^"\n]*"?)|(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)'
                  r'|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<deco>@)')


@dataclass(frozen=True)
class Token:
    start: int  # absolute offsets
    end: int
    type: str
    modifiers: tuple = ()


def _names(a, item) -> dict:
    """absolute offset -> (type, modifiers) for the names of one item."""
    env = a.env
    out: dict = {}
    base = item.offset

    def put(pos, typ, *mods):
        out[base + pos[0]] = (typ, mods)

    if item.name:
        kind = item.declared_kind if isinstance(item, A.BrokenItem) else item.kind
        typ = {"dim": "variable", "model": "type", "fn": "function"}.get(kind)
        if typ:
            put(item.name_pos, typ, "declaration", *(("readonly",) if kind == "dim" else ()))
    res = fn_result(a, item)
    calls = set()
    for n in walk(item):
        if isinstance(n, A.Call) and isinstance(n.func, A.Name):
            calls.add(id(n.func))
    for n in walk(item):
        if isinstance(n, A.Param):
            put(n.name_pos, "parameter", "declaration")
        elif isinstance(n, A.Field):
            put(n.name_pos, "property", "declaration")
        elif isinstance(n, A.Assign):
            put(n.target_pos, "variable", "declaration")
        elif isinstance(n, A.TupleAssign):
            for _, pos in n.targets:
                put(pos, "variable", "declaration")
        elif isinstance(n, A.For):
            put(n.var_pos, "variable", "declaration")
        elif isinstance(n, A.FieldRead):
            put(n.name_pos, "property")
        elif isinstance(n, A.Decorator):
            put((n.pos[0], n.pos[0] + 1 + len(n.name)), "decorator")
        elif isinstance(n, A.Arg) and n.name:
            put((n.pos[0], n.pos[0] + len(n.name)), "parameter")
        elif isinstance(n, A.Name):
            if id(n) in calls:
                if n.id in BUILTINS:
                    put(n.pos, "function", "defaultLibrary")
                else:
                    put(n.pos, "function")
            elif binding_of(res, n.id, n.pos[0]) is not None:
                is_param = isinstance(item, A.FnItem) and any(p.name == n.id for p in item.params) and \
                    binding_of(res, n.id, n.pos[0])[1] in [p.name_pos for p in item.params]
                put(n.pos, "parameter" if is_param else "variable")
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


def semantic_tokens(ws, path: str, start: int = 0, end: int | None = None) -> list:
    a = ws.analyze(path)
    if a is None:
        return []
    text = a.file.text
    end = len(text) if end is None else end
    names: dict = {}
    for item in a.file.items:
        if item.offset + len(item.text) >= start and item.offset <= end:
            names.update(_names(a, item))
    out = []
    for m in _LEX.finditer(text, start, end):
        kind = m.lastgroup
        s, e = m.start(), m.end()
        if kind == "name":
            word = m.group()
            if s in names:
                typ, mods = names[s]
                out.append(Token(s, e, typ, mods))
            elif word in KEYWORDS:
                out.append(Token(s, e, "keyword"))
        elif kind == "deco":
            continue
        else:
            out.append(Token(s, e, kind))
    return out



