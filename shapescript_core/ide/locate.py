"""What is at an offset: the item, the chain of syntax nodes around it, the binding a name
refers to. Shared by hover, navigation, completion and inlay hints."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Optional

from ..syntax import ast as A


@dataclass(frozen=True)
class Location:
    """A range of a file: code-point offsets into its text."""

    path: str
    start: int
    end: int


def item_at(f, offset: int) -> Optional[A.Item]:
    """The top-level item whose text holds `offset` (its end included)."""
    if f is None or not f.items:
        return None
    offsets = [it.offset for it in f.items]
    i = bisect.bisect_right(offsets, offset) - 1
    if i < 0:
        return None
    it = f.items[i]
    return it if offset <= it.offset + len(it.text) else None


def item_under(ws, path: str, offset: int):
    """(the analysis of `path`, the top-level item at `offset`, the offset inside it), or
    None where the file has no analysis or no item there."""
    a = ws.analyze(ws.norm(path))
    if a is None:
        return None
    item = item_at(a.file, offset)
    if item is None:
        return None
    return a, item, offset - item.offset


def roots(item: A.Item) -> list:
    """The syntax nodes directly under an item."""
    if isinstance(item, A.FnItem):
        out = list(item.decorators) + list(item.params)
        if item.ret is not None:
            out.append(item.ret)
        return out + list(item.body)
    if isinstance(item, A.ModelItem):
        return list(item.fields)
    if isinstance(item, A.DimItem):
        return [item.value] if item.value is not None else []
    return []


def children(n) -> list:
    """Every syntax node directly under n (A.children's SYNTAX list)."""
    return A.children(n, A.SYNTAX)


def chain(item: A.Item, rel: int) -> list:
    """The nodes holding the item-relative offset `rel`, outermost first.

    A node's end counts as inside it, so a cursor just after a name finds the name; a
    node that holds the offset strictly wins over one that merely ends there.
    """
    out: list = []
    kids = roots(item)
    while kids:
        best = None
        for k in kids:
            pos = getattr(k, "pos", None)
            if not pos:
                continue
            s, e = pos
            if s <= rel < e:
                best = k
                break
            if best is None and s <= rel <= e:
                best = k
        if best is None:
            break
        out.append(best)
        kids = children(best)
    return out


def walk(item: A.Item):
    """Every syntax node of an item, depth first."""
    stack = list(reversed(roots(item)))
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def inside(pos, rel: int) -> bool:
    return pos is not None and pos[0] <= rel <= pos[1]


def fn_result(analysis, item):
    """The body check of a function item of the analysed file, or None."""
    if analysis is None or not isinstance(item, A.FnItem):
        return None
    res = analysis.fns.get(item.name)
    return res if res is not None and res.item is item else None


def binding_of(res, name: str, rel: int):
    """The binding (name, pos, Type) a use of `name` at `rel` reads: the last one before it."""
    if res is None:
        return None
    best = None
    for b in res.locals_at:
        if b[0] == name and b[1][0] <= rel:
            if best is None or b[1][0] >= best[1][0]:
                best = b
    return best


def item_extent(item: A.Item) -> tuple[int, int]:
    """Absolute (start, end) of an item's text, trailing blanks left out."""
    return item.offset, item.offset + len(item.text.rstrip())


def name_location(item: A.Item) -> Location:
    return Location(item.path, item.offset + item.name_pos[0], item.offset + item.name_pos[1])
