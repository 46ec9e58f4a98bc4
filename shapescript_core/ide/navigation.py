"""Go to definition (dims, models, fields, functions, locals, across imports), the
document outline and the project's symbols."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from ..check.types import ModelT
from ..syntax import ast as A
from .hover import fn_header
from .locate import (Location, binding_of, chain, children, fn_result, inside, item_under,
                     item_extent, name_location)
from .project import project_files


def definition(ws, path: str, offset: int) -> list:
    found = item_under(ws, path, offset)
    if found is None:
        return []
    a, item, rel = found
    if item.name and inside(item.name_pos, rel):
        return [name_location(item)]
    if isinstance(item, A.ImportItem) and inside(item.target_pos, rel):
        target = os.path.normpath(os.path.join(os.path.dirname(item.path), item.target))
        return [Location(target, 0, 0)] if ws.file(target) is not None else []
    res = fn_result(a, item)
    types = res.types if res is not None else {}
    nodes = chain(item, rel)
    for k in range(len(nodes) - 1, -1, -1):
        node = nodes[k]
        parent = nodes[k - 1] if k > 0 else None
        loc = _node_definition(a, item, res, types, node, parent, rel)
        if loc is not None:
            return [loc]
    return []


def _at(item, pos) -> Location:
    return Location(item.path, item.offset + pos[0], item.offset + pos[1])


def _named(a, name: str) -> Optional[Location]:
    """Where a dim, model or function named `name`, visible in the file, is defined."""
    env = a.env
    it = env.dims.items.get(name)
    if it is None:
        m = env.models.get(name)
        it = m.item if m is not None else None
    if it is None:
        it = a.visible.get(name)
        if it is not None and not isinstance(it, (A.FnItem, A.ModelItem, A.DimItem, A.BrokenItem)):
            it = None
    return name_location(it) if it is not None else None


def _size_var(item, res, name: str) -> Optional[Location]:
    """A size variable is defined where the signature first names it."""
    if not isinstance(item, A.FnItem):
        return None
    for p in list(item.params) + ([item.ret] if item.ret is not None else []):
        for n in walk_node(p):
            if isinstance(n, A.SName) and n.name == name:
                return _at(item, n.pos)
    return None


def walk_node(n):
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def _node_definition(a, item, res, types, node, parent, rel) -> Optional[Location]:
    env = a.env
    if isinstance(node, A.Param) and inside(node.name_pos, rel):
        return _at(item, node.name_pos)
    if isinstance(node, A.Field) and inside(node.name_pos, rel):
        return _at(item, node.name_pos)
    if isinstance(node, A.Assign) and inside(node.target_pos, rel):
        return _at(item, node.target_pos)
    if isinstance(node, A.TupleAssign):
        for _, pos in node.targets:
            if inside(pos, rel):
                return _at(item, pos)
    if isinstance(node, A.For) and inside(node.var_pos, rel):
        return _at(item, node.var_pos)
    if isinstance(node, A.For) and node.index is not None and inside(node.index_pos, rel):
        return _at(item, node.index_pos)
    if isinstance(node, A.Arg) and node.name and rel <= node.pos[0] + len(node.name):
        if isinstance(parent, A.Call) and isinstance(parent.func, A.Name):
            sig = env.sig(parent.func.id)
            if sig is not None:
                p = next((p for p in sig.params if p.name == node.name), None)
                if p is not None:
                    return _at(sig.item, p.node.name_pos)
        return None
    if isinstance(node, A.FieldRead) and inside(node.name_pos, rel):
        ot = types.get(id(node.obj))
        if isinstance(ot, ModelT):
            m = env.models.get(ot.name)
            fi = m.fields.get(node.name) if m is not None else None
            if fi is not None:
                return _at(fi.item, fi.node.name_pos)
        return None
    if isinstance(node, A.Name):
        name = node.id
        if isinstance(parent, A.Call) and parent.func is node:
            return _named(a, name)
        b = binding_of(res, name, node.pos[0])
        if b is not None:
            return _at(item, b[1])
        if res is not None and name in res.svars and not env.dims.is_dim(name):
            return _size_var(item, res, name)
        return _named(a, name)
    if isinstance(node, (A.SName, A.PName)):
        if env.dims.is_dim(node.name):
            return _named(a, node.name)
        return _size_var(item, res, node.name)
    if isinstance(node, (A.NamedTypeExpr, A.DtypeExpr)):
        return _named(a, node.name) if node.name in env.models or node.name in a.visible else None
    return None


# ---------------------------------------------------------------- outline
@dataclass
class Symbol:
    name: str
    kind: str  # dim model field fn import
    detail: str
    start: int  # absolute: the whole definition
    end: int
    sel_start: int  # absolute: the name
    sel_end: int
    children: list = field(default_factory=list)


def document_symbols(ws, path: str) -> list:
    f = ws.file(path)
    if f is None:
        return []
    out = []
    for item in f.items:
        start, end = item_extent(item)
        if isinstance(item, A.ImportItem):
            s, e = item.offset + item.target_pos[0], item.offset + item.target_pos[1]
            out.append(Symbol(item.target or "import", "import", "import", start, end, s, e))
            continue
        if not item.name:
            continue
        sel = name_location(item)
        kind = item.declared_kind if isinstance(item, A.BrokenItem) else item.kind
        if isinstance(item, A.DimItem):
            detail = item.src(item.value.pos) if item.value is not None else ""
        elif isinstance(item, A.FnItem):
            detail = fn_header(item)[len("fn "):][len(item.name):]
        else:
            detail = ""
        sym = Symbol(item.name, kind or "item", detail, start, end, sel.start, sel.end)
        if isinstance(item, A.ModelItem):
            for fd in item.fields:
                sym.children.append(Symbol(fd.name, "field", item.src(fd.type.pos),
                                           item.offset + fd.pos[0], item.offset + fd.pos[1],
                                           item.offset + fd.name_pos[0], item.offset + fd.name_pos[1]))
        out.append(sym)
    return out



# ---------------------------------------------------------------- workspace symbols
@dataclass(frozen=True)
class WorkspaceSymbol:
    name: str
    kind: str  # dim model field fn
    path: str
    start: int  # the name
    end: int
    container: str = ""  # a field's model


def workspace_symbols(ws, query: str, limit: int = 500) -> list:
    """The dims, models, fields and functions of the project whose name holds the
    query's letters in order (case ignored), best first: the name itself, then names
    that start with it, then the shorter. Read from the parse only: nothing is checked."""
    q = query.lower()
    found = []
    for p in project_files(ws):
        f = ws.file(p)
        if f is None:
            continue
        for item in f.items:
            if not item.name or isinstance(item, A.ImportItem):
                continue
            kind = item.declared_kind if isinstance(item, A.BrokenItem) else item.kind
            if _fuzzy(q, item.name):
                loc = name_location(item)
                found.append(WorkspaceSymbol(item.name, kind, p, loc.start, loc.end))
            if isinstance(item, A.ModelItem):
                for fd in item.fields:
                    if _fuzzy(q, fd.name):
                        found.append(WorkspaceSymbol(fd.name, "field", p, item.offset + fd.name_pos[0],
                                                     item.offset + fd.name_pos[1], item.name))
    found.sort(key=lambda s: (s.name.lower() != q, not s.name.lower().startswith(q), len(s.name), s.name, s.path,
                              s.start))
    return found[:limit]


def _fuzzy(q: str, name: str) -> bool:
    it = iter(name.lower())
    return all(ch in it for ch in q)
