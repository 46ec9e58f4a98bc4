"""E0413: a condition (`A if C else B`) or an attention's window that isn't known before
the model runs (LANGUAGE.md §5, v0.2). Its message and help, and two of its checks:

- inside a function, checked in check/function.py (`FnChecker._if`, with builtins.py's
  `_window_ok` for windows); the compiler raises the same words (compile/graph.py) for a
  condition that can't be folded;
- at a call, here (`check_static_args`, run by serving/entry.py over what an exported
  function reaches): a function's scalar parameter (`theta: []`) is a compile-time value
  inside it, so the function may choose by it or pass it as a window; that holds at a
  call that passes a compile-time value. Analysed per calling context, as E3304 follows
  token axes: a parameter that decides something in a callee, directly or through the
  callee's own calls, must get a compile-time value at every call; a value the model
  computes there is E0413 at the argument. No numpy here: this runs as the user types.

It sits in check/codes/, below compile/ and serving/, because the checker and the
compiler word it too.
"""
from __future__ import annotations

from ...diagnostics import Diagnostic, error
from ...syntax import ast as A
from ..types import TensorT

CONDITION_NOT_STATIC = "this condition isn't known before the model runs"


def condition_not_static(span, label: str) -> Diagnostic:
    """`A if C else B` with C computed when the model runs (LANGUAGE.md §5, v0.2)."""
    return error("E0413", CONDITION_NOT_STATIC, span, label).help(
        "choose with literals, dims, loop indices and scalar parameters; pick between tensors "
        "that the model computes with `where(mask, a, b)`")


def compile_error_text() -> str:
    """The compiler's words for a condition it can't fold (compile/graph.py)."""
    return (f"error[E0413]: {CONDITION_NOT_STATIC} (a scalar parameter given a value "
            f"computed by the model?)")


def check_static_args(prog, fns: list) -> list:
    """E0413 at each call in this file that passes a value computed by the model to a
    parameter its callee decides by."""
    deciding = {id(r.item): _direct(prog, r) for r in fns}  # fn -> {param: what it decides}
    changed = True
    while changed:  # a parameter passed on to a deciding parameter decides too
        changed = False
        for r in fns:
            mine = deciding[id(r.item)]
            for info, callee, pname, arg in _calls(prog, r):
                why = deciding.get(id(callee.item), {}).get(pname)
                if why is None:
                    continue
                for p in _params_read(r, arg.value):
                    if p not in mine:
                        mine[p] = f"passed on to `{callee.item.name}`, where it {why}"
                        changed = True
    out = []
    for r in fns:
        if not prog.local(r.item):
            continue
        for info, callee, pname, arg in _calls(prog, r):
            why = deciding.get(id(callee.item), {}).get(pname)
            if why is not None and id(arg.value) not in r.static:
                out.append(condition_not_static(
                    r.item.span(arg.value.pos), f"computed when the model runs, but `{pname}` of "
                                                f"`{callee.item.name}` {why}"))
    return out


def _calls(prog, r):
    """(CallInfo, callee FnResult, parameter, Arg) of each user call's given arguments."""
    for info in r.calls.values():
        if info.sig is None:
            continue
        _, callee = prog.callee(r, info)
        if callee is None:
            continue
        for pname, arg in info.args:
            if arg is not None:
                yield info, callee, pname, arg


def _scalar_params(r) -> dict:
    """{binding position: name} of the function's scalar parameters (`theta: []`)."""
    param_pos = {p.name_pos for p in r.item.params}
    return {pos: name for name, pos, t in r.locals_at
            if pos in param_pos and isinstance(t, TensorT) and not t.axes}


def _direct(prog, r) -> dict:
    """{param: what it decides} of a function's own conditions and windows."""
    out: dict = {}
    for s in A.walk_stmts(r.item.body):
        roots = [s.iter] if isinstance(s, A.For) else [s.value]
        for root in roots:
            for n in A.walk_expr(root):
                if isinstance(n, A.IfExpr):
                    for p in _params_read(r, n.cond):
                        out.setdefault(p, f"chooses a branch at line {prog.line(r.item, n.cond.pos)}")
                elif isinstance(n, A.Call):
                    info = r.calls.get(id(n))
                    window = info.arg_map.get("window") if info is not None and info.builtin is not None else None
                    if window is not None:
                        for p in _params_read(r, window.value):
                            out.setdefault(p, f"is an attention's window at line "
                                              f"{prog.line(r.item, window.value.pos)}")
    return out


def _params_read(r, expr) -> set:
    """The scalar parameters an expression reads, directly or through the compile-time
    locals it reads (each followed to the binding it reads)."""
    params = _scalar_params(r)
    assigns = {s.target_pos: s for s in A.walk_stmts(r.item.body) if isinstance(s, A.Assign)}
    out, seen, work = set(), set(), [expr]
    while work:
        e = work.pop()
        for n in A.walk_expr(e):
            if not isinstance(n, A.Name):
                continue
            b = _binding(r, n, assigns)
            if b is None or b in seen:
                continue
            seen.add(b)
            if b in params:
                out.add(params[b])
            elif b in assigns and id(assigns[b].value) in r.static:
                work.append(assigns[b].value)
    return out


def _binding(r, name: A.Name, assigns: dict):
    """The position of the binding a name reads: the last one before it, not the one
    its own statement makes (`theta = theta * 2` reads the theta before)."""
    best = None
    for n, pos, _ in r.locals_at:
        if n != name.id or pos[0] > name.pos[0] or (best is not None and pos[0] < best[0]):
            continue
        s = assigns.get(pos)
        if s is not None and s.value.pos[0] <= name.pos[0] <= s.value.pos[1]:
            continue
        best = pos
    return best
