"""E3304, the values of the token-axis flow (e3304_token_axes.py): per-axis tags, taint,
calling contexts. E3305 (e3305_attention.py) reads the attention sites' tags too."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.sizes import Size
from ..check.types import TensorT, TupleT
from ..syntax import ast as A

NONE = frozenset()


@dataclass(frozen=True)
class Val:
    tags: tuple = ()  # per axis: frozenset of exported token axis names
    tainted: bool = False
    items: Optional[tuple] = None  # a tuple's values


CLEAN = Val()


@dataclass(frozen=True)
class Origin:
    """How a local axis name came to stand for a token axis."""

    kind: str  # "param" or "rename"
    line: int
    callee: str = ""


class Ctx:
    """One function analysed in one calling context."""

    def __init__(self, res, env, names: dict, stack: tuple, sizes: dict | None = None):
        self.res = res
        self.item = res.item
        self.env = env
        self.names = names  # size variable -> (tags, Origin or None)
        self.stack = stack  # ((caller item, call node), ...) from the exported function
        self.sizes = sizes or {}  # size variable of a parameter -> the size it has in this context
        self.ret = CLEAN

    def resolve(self, size: Size) -> Size:
        """A size in the exported function's terms (a callee's size variables replaced)."""
        return size.subst(self.sizes) if self.sizes else size

    def size_tags(self, size: Size) -> frozenset:
        out = NONE
        for s in size.symbols():
            if s in self.names:
                out = out | self.names[s][0]
        return out

    def key(self, name: str) -> Size:
        d = self.env.dim(name)
        return d if d is not None else Size.sym(name)

    def render(self, size: Size) -> str:
        return self.env.dims.render(size)


@dataclass
class Site:
    """A scaled_dot_product_attention reached in some context (for E3305)."""

    ctx: Ctx
    call: A.Call
    types: tuple  # q, k, v
    vals: tuple
    args: tuple  # q, k, v Arg nodes


def tag_at(v: Val, i: int) -> frozenset:
    try:
        return v.tags[i]
    except IndexError:
        return NONE


def fit(v: Val, t) -> Val:
    """v with one tag per axis of t."""
    if isinstance(t, TensorT):
        if len(v.tags) != len(t.axes):
            return Val(tuple(NONE for _ in t.axes), v.tainted)
        return v
    if isinstance(t, TupleT):
        return v
    return Val((), v.tainted) if v.tags else v


def join(a: Optional[Val], b: Val) -> Val:
    """The union of two values' tags (and taint), tuples item by item, at any depth."""
    out: dict = {}
    stack = [(a, b, False)]
    while stack:
        x, y, expanded = stack.pop()
        if x is None or x is y:
            out[id(x), id(y)] = y
        elif _pairs(x, y) and not expanded:
            stack.append((x, y, True))
            stack.extend((p, q, False) for p, q in zip(x.items, y.items))
        elif _pairs(x, y):
            items = tuple(out[id(p), id(q)] for p, q in zip(x.items, y.items))
            out[id(x), id(y)] = Val(items=items, tainted=x.tainted or y.tainted)
        elif len(x.tags) == len(y.tags):
            out[id(x), id(y)] = Val(tuple(p | q for p, q in zip(x.tags, y.tags)), x.tainted or y.tainted)
        else:
            out[id(x), id(y)] = Val(y.tags, x.tainted or y.tainted)
    return out[id(a), id(b)]


def _pairs(x: Val, y: Val) -> bool:
    return x.items is not None and y.items is not None and len(x.items) == len(y.items)
