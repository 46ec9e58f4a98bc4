"""What each name refers to, and every place that refers to the same thing: references,
document highlight and go to type definition (rename, with its checks, is rename.py).

A symbol is known by a key:

    ("item", path, start)           a dim, model or function: where its name is declared
    ("field", path, start, name)    a field of the model declared at (path, start)
    ("local", path, offset, name)   a parameter or local of the function at (path, offset);
                                    every binding of one name in one function is the same
                                    symbol (`x = x + f(x)` rebinds it), and so is a keyword
                                    argument naming the parameter at a call
    ("svar", path, offset, name)    a size variable of that function

References of an item or a field are looked for in its file and in every project file
that imports it (open or on disk: `project.py`); those of a local in its
file and its importers (keyword arguments); those of a size variable in its function.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..check.types import DTYPE_NAMES, ModelT, StackT
from ..syntax import ast as A
from .locate import Location, binding_of, children, fn_result, item_under, roots
from .project import project_files


@dataclass(frozen=True)
class Occurrence:
    """One name in the text: absolute offsets, what it refers to, whether it binds it."""

    path: str
    start: int
    end: int
    key: tuple
    name: str
    write: bool = False

    @property
    def location(self) -> Location:
        return Location(self.path, self.start, self.end)


KIND_WORDS = {"item": "", "field": "field", "local": "local", "svar": "size variable"}
RESERVED_TYPES = set(DTYPE_NAMES) | {"Index"}


def _item_key(it: A.Item) -> tuple:
    return ("item", it.path, it.offset + it.name_pos[0])


def _global(a, name: str) -> Optional[A.Item]:
    it = a.visible.get(name)
    if isinstance(it, (A.DimItem, A.ModelItem, A.FnItem, A.BrokenItem)) and it.name:
        return it
    return None


def _walk(item: A.Item):
    """(node, parent) for every syntax node of an item, parents first."""
    stack = [(n, None) for n in reversed(roots(item))]
    while stack:
        n, parent = stack.pop()
        yield n, parent
        stack.extend((k, n) for k in reversed(children(n)))


def item_occurrences(a, item: A.Item) -> list:
    """Every name of one item that refers to a symbol, in source order."""
    out: list = []
    base = item.offset
    path = item.path

    def add(pos, key, name, write=False):
        out.append(Occurrence(path, base + pos[0], base + pos[1], key, name, write))

    def add_global(pos, name):
        it = _global(a, name)
        if it is not None:
            add(pos, _item_key(it), name)

    if item.name and not isinstance(item, A.ImportItem):
        add(item.name_pos, _item_key(item), item.name, True)
    env = a.env
    res = fn_result(a, item)
    types = res.types if res is not None else {}
    is_fn = isinstance(item, A.FnItem)
    local = ("local", path, item.offset)
    svar = ("svar", path, item.offset)

    def size_name(pos, name):
        if env.dims.is_dim(name) or not is_fn:
            add_global(pos, name)
        else:
            add(pos, svar + (name,), name)

    calls = set()
    for n, parent in _walk(item):
        if isinstance(n, A.Call):
            calls.add(id(n.func))
            if isinstance(n.func, A.Name):
                sig = env.sig(n.func.id)
                for arg in n.args:
                    if arg.name and sig is not None and any(p.name == arg.name for p in sig.params):
                        it = sig.item
                        add((arg.pos[0], arg.pos[0] + len(arg.name)), ("local", it.path, it.offset, arg.name),
                            arg.name)
        elif isinstance(n, A.Param):
            add(n.name_pos, local + (n.name,), n.name, True)
        elif isinstance(n, A.Field) and isinstance(item, A.ModelItem) and item.name:
            add(n.name_pos, ("field", path, base + item.name_pos[0], n.name), n.name, True)
        elif isinstance(n, A.Assign):
            add(n.target_pos, local + (n.target,), n.target, True)
        elif isinstance(n, A.TupleAssign):
            for name, pos in n.targets:
                add(pos, local + (name,), name, True)
        elif isinstance(n, A.For):
            if n.index is not None:
                add(n.index_pos, local + (n.index,), n.index, True)
            add(n.var_pos, local + (n.var,), n.var, True)
        elif isinstance(n, A.FieldRead):
            m = _model_of(env, types.get(id(n.obj)))
            fi = m.fields.get(n.name) if m is not None else None
            if fi is not None and fi.item.name:
                mi = fi.item
                add(n.name_pos, ("field", mi.path, mi.offset + mi.name_pos[0], n.name), n.name)
        elif isinstance(n, A.Name):
            name = n.id
            if id(n) in calls:
                add_global(n.pos, name)
                continue
            if binding_of(res, name, n.pos[0]) is not None:
                add(n.pos, local + (name,), name)
            elif res is not None and name in res.svars and not env.dims.is_dim(name):
                add(n.pos, svar + (name,), name)
            else:
                add_global(n.pos, name)
        elif isinstance(n, (A.SName, A.PName)):
            size_name(n.pos, n.name)
        elif isinstance(n, (A.NamedTypeExpr, A.DtypeExpr)):
            if n.name not in RESERVED_TYPES:
                add_global((n.pos[0], n.pos[0] + len(n.name)), n.name)
    out.sort(key=lambda o: o.start)
    return out


def _model_of(env, t):
    if isinstance(t, ModelT):
        return env.models.get(t.name)
    if isinstance(t, StackT):
        return env.models.get(t.model)
    return None


def occurrence_at(ws, path: str, offset: int) -> Optional[Occurrence]:
    """The name at `offset` (its end included) and what it refers to."""
    found = item_under(ws, path, offset)
    if found is None:
        return None
    a, item, _ = found
    hits = [o for o in item_occurrences(a, item) if o.start <= offset <= o.end]
    inner = [o for o in hits if o.start <= offset < o.end]
    return (inner or hits or [None])[0]


def _files_for(ws, key: tuple) -> list:
    """The files that may refer to the symbol: its own, and those that import it."""
    own = key[1]
    if key[0] == "svar":
        return [own]
    out = [own]
    for p in project_files(ws):
        if p != own and own in ws.import_closure(p):
            out.append(p)
    return out


def _word(name: str):
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")


def find_references(ws, key: tuple, name: str) -> list:
    """Every occurrence of the symbol `key` (named `name`), by file, in source order."""
    word = _word(name)
    out = []
    for p in _files_for(ws, key):
        a = ws.analyze(p)
        if a is None:
            continue
        for item in a.file.items:
            if key[0] in ("svar",) and (item.path != key[1] or item.offset != key[2]):
                continue
            if not word.search(item.text):
                continue
            out.extend(o for o in item_occurrences(a, item) if o.key == key)
    return out


def references(ws, path: str, offset: int, include_declaration: bool = True) -> list:
    """[Location] of every reference to what the name at `offset` refers to."""
    occ = occurrence_at(ws, path, offset)
    if occ is None:
        return []
    return [o.location for o in find_references(ws, occ.key, occ.name) if include_declaration or not o.write]


@dataclass(frozen=True)
class Highlight:
    start: int
    end: int
    write: bool


def document_highlight(ws, path: str, offset: int) -> list:
    """The occurrences of the symbol at `offset` in this file."""
    path = ws.norm(path)
    occ = occurrence_at(ws, path, offset)
    if occ is None:
        return []
    a = ws.analyze(path)
    word = _word(occ.name)
    out = []
    for item in a.file.items:
        if word.search(item.text):
            out.extend(Highlight(o.start, o.end, o.write) for o in item_occurrences(a, item) if o.key == occ.key)
    return out


# ---------------------------------------------------------------- type definition
def type_definition(ws, path: str, offset: int) -> list:
    """Where the model of the value at `offset` is declared (a parameter, a local, a
    field read, a field declaration whose type is a model or a stack of one)."""
    found = item_under(ws, path, offset)
    if found is None:
        return []
    a, item, rel = found
    env = a.env
    res = fn_result(a, item)
    t = None
    for n, _ in _walk(item):
        pos = getattr(n, "pos", None)
        if not pos or not pos[0] <= rel <= pos[1]:
            continue
        if isinstance(n, A.Param) and n.name_pos[0] <= rel <= n.name_pos[1] and isinstance(item, A.FnItem):
            sig = env.sig(item.name)
            p = next((p for p in sig.params if p.node is n), None) if sig is not None else None
            t = p.type if p is not None else None
        elif isinstance(n, A.Field) and n.name_pos[0] <= rel <= n.name_pos[1] and item.name in env.models:
            fi = env.models[item.name].fields.get(n.name)
            t = fi.type if fi is not None else None
        elif isinstance(n, A.FieldRead) and n.name_pos[0] <= rel <= n.name_pos[1] and res is not None:
            t = res.types.get(id(n))
        elif isinstance(n, A.Name) and res is not None:
            b = binding_of(res, n.id, n.pos[0])
            t = res.types.get(id(n)) or (b[2] if b is not None else None)
        elif isinstance(n, (A.Assign, A.For)) and res is not None:
            tpos = n.target_pos if isinstance(n, A.Assign) else n.var_pos
            if tpos[0] <= rel <= tpos[1]:
                b = binding_of(res, n.target if isinstance(n, A.Assign) else n.var, tpos[0])
                t = b[2] if b is not None else None
    m = _model_of(env, t)
    if m is None or not m.item.name:
        return []
    it = m.item
    return [Location(it.path, it.offset + it.name_pos[0], it.offset + it.name_pos[1])]
