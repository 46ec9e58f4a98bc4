"""Where an export check's diagnostic goes: the statement holding a position, a span in a
file, and an error from another file placed at the call in this file that leads there."""
from __future__ import annotations

import os

from ..diagnostics import FileAnchor, Span, error
from ..syntax import ast as A
from ..syntax.ast import op_pos


def stmt_of(body: list, pos: A.Pos):
    """The innermost statement of a body whose span holds pos, and the list it is in."""
    found = None
    while True:
        s = next((s for s in body if s.pos[0] <= pos[0] and pos[1] <= s.pos[1]), None)
        if s is None:
            return found
        found = (s, body)
        if not isinstance(s, A.For):
            return found
        body = s.body


def file_span(path: str, start: int, end: int) -> Span:
    return Span(FileAnchor(path), start, end)


def placed_error(prog, item, pos, stack, code: str, message: str, label: str):
    """An error at pos in item; from another file, at the call in this file leading there."""
    if prog.local(item):
        return error(code, message, item.span(pos), label)
    for caller, call in reversed(stack):
        if prog.local(caller):
            callee = call.func.id if isinstance(call.func, A.Name) else "the callee"
            where = f"{os.path.basename(item.path)}:{prog.line(item, pos)}"
            d = error(code, message, caller.span(op_pos(call)), f"in `{callee}`, at {where}")
            return d.label(item.span(pos), label)
    return error(code, message, item.span(pos), label)


def item_of_node(prog, tr, node):
    """The function item a trace node comes from (by its file and line)."""
    if node is None or not node.where or node.ast is None:
        return None
    path, line = node.where
    for g in tr.program.fns.values():
        it = g.item
        if it.path != path:
            continue
        first = prog.line(it, (0, 0))
        last = prog.line(it, (len(it.text), len(it.text)))
        if first <= line <= last:
            return it
    return None
