"""`bottom_up`: a value for every node of a tree or DAG, children first, without recursion.

The compile-time evaluator, the compiler's expression lowering and the tracer each walk
expressions this way; a source may nest a thousand operators, more than Python's stack.
"""
from __future__ import annotations

from typing import Any, Callable


def bottom_up(root, children: Callable[[Any], list], one: Callable[[Any, dict], Any]):
    """one(node, done) for each node reachable from `root` through `children`, once per
    node (by identity), after its children's values are in `done` (id -> value), children
    taken left to right; the root's value."""
    done: dict = {}
    stack = [(root, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in done:
            continue
        kids = children(n)
        if not ready and kids:
            stack.append((n, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in done)
            continue
        done[id(n)] = one(n, done)
    return done[id(root)]
