"""The checks of a whole file, over what its items' checks found: the import cycle it is on
(E0209), recursion (E0207), the params no exported function reads (W0102), and the
names an unreadable import may define (hidden after E0210). The Workspace runs them at
the end of a file's analysis; they read only what it hands them."""
from __future__ import annotations

import os

from ..diagnostics import error, warning
from ..syntax import ast as A
from .graphs import components, reached, shortest_path
from .types import TensorT

# unknown names, types, callees and free dims in fields: with an import missing, the
# missing file may well define them
UNRESOLVED_NAME_CODES = {"E0201", "E0202", "E0205"}


def import_cycle(it, cycle: list):
    """E0209 at an import on a cycle of imports (`cycle`: the files, the first again last)."""
    names = " → ".join(os.path.basename(p) for p in cycle)
    return error("E0209", f"import cycle: {names}", it.span(it.pos), "this import is on the cycle")


def hide_unresolved(diags: list) -> list:
    """The diagnostics but those a missing import may explain (E0210 among them)."""
    if any(d.code == "E0210" for d in diags):
        return [d for d in diags if d.code not in UNRESOLVED_NAME_CODES]
    return diags


def recursion(fns: dict, own: dict) -> list:
    """E0207 at each call on a cycle of calls among the file's functions."""
    graph = {n: {c for c in r.callees if c in fns} for n, r in fns.items()}
    component = components(graph)
    out = []
    for n, r in fns.items():
        for callee, poss in r.callees.items():
            if callee not in fns or component[callee] != component[n]:
                continue  # a call between two components is on no cycle
            path = shortest_path(graph, callee, n)
            if path is None:
                continue
            cycle = [n] + path
            msg = f"`{n}` calls itself" if callee == n else f"`{n}` calls itself: {' → '.join(cycle)}"
            for pos in poss:
                out.append(error("E0207", msg, own[n].span(pos), "this call is on the cycle").help(
                    "recursion can't be unrolled into a fixed graph: write the repetition as a stack and `for`"))
    return out


def reaches_itself(fns: dict, name: str) -> bool:
    """Whether the calls of `name` lead back to it (depth first, on an explicit stack)."""
    seen = set()
    stack = [name]
    while stack:
        r = fns.get(stack.pop())
        if r is None:
            continue
        for c in r.callees:
            if c == name:
                return True
            if c not in seen and c in fns:
                seen.add(c)
                stack.append(c)
    return False


def calls_from(roots: list, result_of) -> dict:
    """name -> result of the functions `roots` call, directly or not, and of the roots;
    `result_of(name)` is a function's result, None for one not followed."""
    return {n: res for n, res in reached(roots, result_of, lambda res: res.callees) if res is not None}


def unread_fields(roots: list, fns: dict, own: dict, models: dict, result_of) -> list:
    """W0102: a param field of the file's models that no function of `roots` (the
    file's exported ones, those among its checked functions `fns`) reads, directly or
    through what they call (`result_of`)."""
    if not roots:
        return []
    reads: set = set()
    for res in calls_from([r for r in roots if r in fns], result_of).values():
        reads |= res.field_reads
    out = []
    for name, it in own.items():
        m = models.get(name)
        if not isinstance(it, A.ModelItem) or m is None:
            continue
        for fname, fi in m.fields.items():
            if isinstance(fi.type, TensorT) and (name, fname) not in reads:
                out.append(warning("W0102", f"no exported function reads `{fname}`",
                                   it.span(fi.node.name_pos), "this weight is never used")
                           .help("remove the field, or use it in the exported function"))
    return out
