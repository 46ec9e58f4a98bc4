"""Call hierarchy: a function's callers (incoming) and callees (outgoing), across the
files of the project that import it. The E3304 chain through helper functions is what
a user walks with it."""
from __future__ import annotations

from dataclasses import dataclass

from ..syntax import ast as A
from .hover import fn_header
from .locate import item_extent, item_under
from .project import project_files


@dataclass(frozen=True)
class CallItem:
    """A function: where it is, its whole text (start, end) and its name (sel)."""

    name: str
    path: str
    start: int
    end: int
    sel_start: int
    sel_end: int
    detail: str


@dataclass(frozen=True)
class Call:
    """The other function of a call, and the calls' ranges (absolute, in `in_path`)."""

    item: CallItem
    in_path: str
    ranges: tuple


def _call_item(it: A.FnItem) -> CallItem:
    start, end = item_extent(it)
    return CallItem(it.name, it.path, start, end, it.offset + it.name_pos[0], it.offset + it.name_pos[1],
                    fn_header(it)[len("fn "):][len(it.name):])


def prepare(ws, path: str, offset: int) -> list:
    """The function at `offset`: its declaration's name, or a call of it."""
    found = item_under(ws, path, offset)
    if found is None:
        return []
    a, item, rel = found
    if isinstance(item, A.FnItem) and item.name_pos[0] <= rel <= item.name_pos[1]:
        return [_call_item(item)]
    res = a.fns.get(item.name) if isinstance(item, A.FnItem) else None
    if res is not None and res.item is item:
        for name, poss in res.callees.items():
            if any(p[0] <= rel <= p[1] for p in poss):
                target = a.visible.get(name)
                if isinstance(target, A.FnItem):
                    return [_call_item(target)]
    return []


def _find(ws, ci: CallItem):
    f = ws.file(ci.path)
    if f is None:
        return None
    for it in f.items:
        if isinstance(it, A.FnItem) and it.name == ci.name:
            return it
    return None


def incoming(ws, ci: CallItem) -> list:
    """The functions that call `ci`, each with the ranges of its calls."""
    target = _find(ws, ci)
    if target is None:
        return []
    out = []
    for p in project_files(ws):
        if p != target.path and target.path not in ws.import_closure(p):
            continue
        a = ws.analyze(p)
        if a is None or a.visible.get(ci.name) is not target:
            continue
        for name, res in a.fns.items():
            poss = res.callees.get(ci.name)
            if poss:
                it = res.item
                out.append(Call(_call_item(it), p, tuple((it.offset + s, it.offset + e) for s, e in poss)))
    return out


def outgoing(ws, ci: CallItem) -> list:
    """The functions `ci` calls (builtins left out), each with the ranges of the calls."""
    source = _find(ws, ci)
    if source is None:
        return []
    a = ws.analyze(source.path)
    res = a.fns.get(ci.name) if a is not None else None
    if res is None:
        return []
    out = []
    for name, poss in res.callees.items():
        callee = a.visible.get(name)
        if isinstance(callee, A.FnItem):
            out.append(Call(_call_item(callee), source.path,
                            tuple((source.offset + s, source.offset + e) for s, e in poss)))
    return out
