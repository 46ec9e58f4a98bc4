"""Graphs of names (calls, models): what a name reaches, strongly connected components
and shortest paths, all iterative (a chain of a thousand calls recurses nowhere)."""
from __future__ import annotations

from collections import deque
from typing import Optional


def reached(start, node_of, successors) -> list:
    """(name, node_of(name)) of the names in `start` and of those they lead to, directly
    or not, each once, depth first; `successors(node)` names what a node (not None) leads
    to."""
    out, seen = [], set()
    stack = list(start)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = node_of(n)
        out.append((n, node))
        if node is not None:
            stack.extend(successors(node))
    return out


def components(graph: dict) -> dict:
    """Strongly connected components (Tarjan, iterative): node -> component id."""
    index: dict = {}
    low: dict = {}
    comp: dict = {}
    stack: list = []
    on_stack: set = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp[x] = node
                    if x == node:
                        break
    return comp


def shortest_path(graph: dict, src: str, dst: str) -> Optional[list]:
    """A call path src → … → dst, if any (breadth first)."""
    if src == dst:
        return [dst]
    prev = {src: None}
    queue = deque([src])
    while queue:
        x = queue.popleft()
        for y in sorted(graph.get(x, ())):
            if y in prev:
                continue
            prev[y] = x
            if y == dst:
                out = [y]
                while prev[out[-1]] is not None:
                    out.append(prev[out[-1]])
                return list(reversed(out))
            queue.append(y)
    return None
