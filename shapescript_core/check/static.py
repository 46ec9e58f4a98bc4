"""Compile-time values (LANGUAGE.md §5, v0.2): the value of an expression the checker
found to be known before the model runs (`FnResult.static`), given the values of the
names it reads (loop indices, compile-time locals, scalar parameters) and of the dims.

One rule for every reader: the checker (a window's sign), hover (a local's value per
layer) and the loop replay (`loop_values`). The compiler folds its own graph nodes with
the same operators (`OPERATORS`).
"""
from __future__ import annotations

import math
import operator
from typing import Callable, Optional

from ..post_order import bottom_up
from ..syntax import ast as A


def _div(a, b):
    return a / b


def _floordiv(a, b):
    return a // b


def _mod(a, b):
    return a % b


# the operators over compile-time values, by source spelling: Python's meaning (`//` and
# `%` round toward minus infinity, as in Python and PyTorch)
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "//": _floordiv,
             "%": _mod, "**": operator.pow, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
             "<=": operator.le, ">": operator.gt, ">=": operator.ge,
             "and": lambda a, b: bool(a) and bool(b), "or": lambda a, b: bool(a) or bool(b)}
FUNCTIONS = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x),
             "tanh": math.tanh, "sigmoid": lambda x: 1 / (1 + math.exp(-x)), "abs": abs,
             "neg": operator.neg, "square": lambda x: x * x, "sin": math.sin, "cos": math.cos,
             "relu": lambda x: max(x, 0.0), "silu": lambda x: x / (1 + math.exp(-x))}
_MISSING = object()


def value(e, names: dict, dim_value: Callable[[str], Optional[int]]):
    """The value of the compile-time expression e, or None where it reads a name with no
    value here (or divides by zero). Iterative: no depth of nesting recurses."""
    return bottom_up(e, _kids, lambda n, done: _one(n, done, names, dim_value))


_COMPUTED = (A.Unop, A.Binop, A.IfExpr, A.Call)  # the operations _one computes from their operands


def _kids(n) -> list:
    return A.children(n, A.OPERANDS) if isinstance(n, _COMPUTED) else []


def _one(n, done, names, dim_value):
    if isinstance(n, A.Number):
        return int(n.value) if n.is_int else float(n.value)
    if isinstance(n, A.Const):
        return {"true": True, "false": False, "inf": math.inf}[n.value]
    if isinstance(n, A.Name):
        v = names.get(n.id, _MISSING)
        if v is _MISSING:
            v = dim_value(n.id)
        return v
    vals = [done[id(k)] for k in _kids(n)]
    if isinstance(n, A.IfExpr):
        c, a, b = vals
        return None if c is None else (a if c else b)
    if any(v is None for v in vals):
        return None
    try:
        if isinstance(n, A.Unop):
            return -vals[0] if n.op == "-" else (not vals[0])
        if isinstance(n, A.Binop) and n.op in OPERATORS:
            return OPERATORS[n.op](*vals)
        if isinstance(n, A.Call) and isinstance(n.func, A.Name) and n.func.id in FUNCTIONS and len(vals) == 1:
            return FUNCTIONS[n.func.id](vals[0])
    except (ArithmeticError, ValueError, OverflowError):
        return None
    return None


def loop_values(res, loop: A.For, count: int, dim_value, target_pos) -> list:
    """The values, for each copy 0 … count-1 of `loop`'s stack, of the compile-time local
    bound at `target_pos` (the index itself, or a local bound in the loop or before it):
    the function's compile-time bindings replayed in order. None where one has no value."""
    out = []
    for i in range(count):
        names: dict = {}
        got = None
        for s in A.walk_stmts(res.item.body):
            if isinstance(s, A.For) and s is loop:
                names[s.index] = i
                if s.index_pos == target_pos:
                    got = i
            elif isinstance(s, A.Assign):
                if id(s.value) in res.static:
                    names[s.target] = value(s.value, names, dim_value)
                else:
                    names.pop(s.target, None)
                if s.target_pos == target_pos:
                    got = names.get(s.target)
        out.append(got)
    return out
