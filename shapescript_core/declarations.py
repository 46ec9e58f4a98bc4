"""The models (or the signatures) one file's analysis sees, each built when first read.

A file sees every name of its import closure: on a cold open of a large project that
is tens of thousands of models and functions, of which one file reads a few dozen.
Its own are built at once (their errors are its diagnostics); an import's when
something looks it up by name (a check, a hover, an export). The order of the names is
the one an eager build gives (the visible names' order): listing the names builds
nothing, listing the values builds them all.

It holds no reference to the analysis's `Meanings` (`build` reads only its declaration
answers): the last analysis's answers go as soon as the next replaces them.
"""
from __future__ import annotations

from typing import Callable, Iterator

_PENDING = object()  # among these, not built yet
_ABSENT = object()  # not among these


def _differs(a, b) -> bool:
    """Whether two `_value`s may be different values (one not built yet may)."""
    return a is _PENDING or b is _PENDING or a is not b


class Declarations:
    """name -> model or signature (a Mapping, with the few dict updates the cutoff of
    `Workspace._analyze` makes): `order` name -> its item, in order; `built` name ->
    value for those built so far; `build(item)` -> value builds one."""

    __slots__ = ("_order", "_built", "_build")

    def __init__(self, order: dict, built: dict, build: Callable):
        self._order = order
        self._built = built
        self._build = build

    # ---- reading (a name looked up is built)
    def get(self, name, default=None):
        it = self._order.get(name, _PENDING)
        if it is _PENDING:  # (a value built under a name not among these: another view's)
            return default
        v = self._built.get(name, _PENDING)
        if v is _PENDING:
            v = self._built[name] = self._build(it)
        return v

    def __getitem__(self, name):
        v = self.get(name, _PENDING)
        if v is _PENDING:
            raise KeyError(name)
        return v

    def __contains__(self, name) -> bool:
        return name in self._order

    def __iter__(self) -> Iterator:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def keys(self):
        return self._order.keys()

    def items(self):
        get = self.get
        return [(n, get(n)) for n in self._order]

    def values(self):
        get = self.get
        return [get(n) for n in self._order]

    def __repr__(self):
        return f"<Declarations {len(self._built)}/{len(self._order)} built>"

    # ---- what is built, without building
    def differing(self, other: "Declarations", among=None) -> set:
        """The names (of `among`, else of either) whose value may differ from `other`'s:
        not the same object in both, or not built in one of them (it may be, once built:
        the caller then asks again)."""
        names = among if among is not None else self._order.keys() | other._order.keys()
        return {n for n in names if _differs(self._value(n), other._value(n))}

    def _value(self, name):
        """The value of `name` if built, _PENDING if not yet, _ABSENT if not among these (a
        value built under it may be another view's: `get`)."""
        return self._built.get(name, _PENDING) if name in self._order else _ABSENT

    # ---- making the next analysis's from the last one's (Workspace._analyze's cutoff)
    def copy(self, build: Callable) -> "Declarations":
        """The same names and built values; the rest built by `build` (the next
        analysis's) when read."""
        return Declarations(dict(self._order), dict(self._built), build)

    def pop(self, name, default=None):
        v = self._built.pop(name, default)
        self._order.pop(name, None)
        return v

    def set_built(self, name, item, value):
        """`name` is `item`, whose value is `value` (a name new here comes last)."""
        self._order[name] = item
        self._built[name] = value

    def repoint(self, name, old, new, moved: Callable):
        """The item of `name` was `old` and is `new` (the same declaration: an edit in a
        body moved it): a value built from `old` becomes `moved(value)`."""
        if self._order.get(name) is not old:
            return
        self._order[name] = new
        v = self._built.get(name)
        if v is not None:
            self._built[name] = moved(v)

    def in_order(self, order) -> "Declarations":
        """These names in the order of `order`'s keys (each of them is one)."""
        mine = self._order
        return Declarations({n: mine[n] for n in order if n in mine}, self._built, self._build)

    def merged(self, own: dict) -> "Declarations":
        """These, then `own` (name -> value, built: a model or signature knows its item),
        after them; what is built stays shared with these (a fresh copy: `copy`)."""
        order = dict(self._order)
        order.update(zip(own.keys(), [v.item for v in own.values()]))
        self._built.update(own)
        return Declarations(order, self._built, self._build)
