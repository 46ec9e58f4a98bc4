"""A file's map of names: name -> the first item that declares it, in the items' order.

A dict of a million names holds a million strings (56 bytes each) and entries (30 bytes
each). `NameMap` holds neither for the commonest item, a `dim NAME = 123` line left in
the file's text (`ast.DimItem`, whose name is read from the text when asked): those are
found through an open-addressing table of their positions in the item list (an array
of 4-byte ints, linear probing, Python's own string hash), comparing names only where
a position's slot is taken. Every other named item sits in a plain dict. Both answer as
one map: a name is in one of them only, with the item that declares it first.
"""
from __future__ import annotations

from array import array
from collections.abc import ItemsView, Mapping, ValuesView

from . import ast as A


class NameMap(Mapping):
    """name -> the first item of `items` (a list, never changed afterwards) that declares
    it. Iterates in the order of the first declarations, as a dict built item by item."""

    __slots__ = ("_items", "_other", "_table", "_mask", "_repeats", "_len")

    def __init__(self, items: list):
        self._items = items
        compact = A.DimItem
        n = sum(1 for it in items if type(it) is compact)
        size = 8
        while size < 2 * n:  # at most half full: few names compared per look-up
            size *= 2
        self._table = table = array("i", [0]) * size if n else None  # (no zero bytes to copy from)
        self._mask = mask = size - 1
        other: dict = {}
        repeats: set = set()  # the positions of the DimItems whose name was declared before
        for i, it in enumerate(items):
            if type(it) is compact:
                s, a = it._src.text, it.offset  # DimItem.name, inline: this loop sees every item
                name = s[a + 3:s.find("=", a)].strip(" \t")
                if name in other:
                    repeats.add(i)
                    continue
                h = hash(name) & mask
                while True:
                    j = table[h]
                    if j == 0:
                        table[h] = i + 1
                        break
                    if items[j - 1].name == name:
                        repeats.add(i)
                        break
                    h = (h + 1) & mask
            else:
                name = it.name
                if name is not None and name not in other and (table is None or self._find(name) < 0):
                    other[name] = it
        self._other, self._repeats = other, repeats
        self._len = len(other) + n - len(repeats)

    def _find(self, name) -> int:
        """The position in the items of the DimItem that declares `name` first, or -1."""
        table = self._table
        if table is None:
            return -1
        mask, items = self._mask, self._items
        try:
            h = hash(name) & mask
        except TypeError:  # not a name at all
            return -1
        while True:
            j = table[h]
            if j == 0:
                return -1
            if items[j - 1].name == name:
                return j - 1
            h = (h + 1) & mask

    def get(self, name, default=None):
        it = self._other.get(name) if isinstance(name, str) else None
        if it is not None:
            return it
        i = self._find(name)
        return self._items[i] if i >= 0 else default

    def __getitem__(self, name):
        it = self.get(name)
        if it is None:
            raise KeyError(name)
        return it

    def __contains__(self, name) -> bool:
        return self.get(name) is not None

    def __len__(self) -> int:
        return self._len

    def pairs(self):
        """(name, item) of each name, in order (each item's name read once)."""
        compact, other, repeats = A.DimItem, self._other, self._repeats
        for i, it in enumerate(self._items):
            if type(it) is compact:
                if i not in repeats:
                    yield it.name, it
            else:
                n = it.name
                if n is not None and other.get(n) is it:
                    yield n, it

    def __iter__(self):
        return (n for n, _ in self.pairs())

    def items(self):
        return _Pairs(self)

    def values(self):
        return _Values(self)

    def firsts(self):
        """The first item of each name, in order (no name read for a DimItem)."""
        compact, other, repeats = A.DimItem, self._other, self._repeats
        for i, it in enumerate(self._items):
            if type(it) is compact:
                if i not in repeats:
                    yield it
            else:
                n = it.name
                if n is not None and other.get(n) is it:
                    yield it

    def others(self) -> dict:
        """name -> item of the names whose first item is not a DimItem (models, functions,
        imports' names, broken items, dims of other forms), in order: what a walk looking
        for anything but a simple dim needs, without a million names read. Not to change."""
        return self._other

    def earlier(self, i: int, it) -> "A.Item | None":
        """The item that declares the name of `it` (the item at position `i`) first, when
        that is not `it`; else None."""
        if type(it) is A.DimItem:
            return self[it.name] if i in self._repeats else None
        name = it.name
        if name is None:
            return None
        first = self.get(name)
        return None if first is it else first


class _Pairs(ItemsView):
    __slots__ = ()

    def __iter__(self):
        return self._mapping.pairs()


class _Values(ValuesView):
    __slots__ = ()

    def __iter__(self):
        return self._mapping.firsts()


def without_simple_dims(names: Mapping) -> Mapping:
    """A name map to walk for anything but a simple dim (`ast.DimItem`): a NameMap's
    `others()`, any other map itself."""
    return names.others() if isinstance(names, NameMap) else names
