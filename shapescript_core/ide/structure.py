"""The shape of a file: folding ranges (items, statements that span lines: pipelines,
`for` loops; comment blocks; runs of imports) and selection ranges (from the name at a
position out to its item and the whole file)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..syntax import ast as A
from .locate import chain, item_at, item_extent

COMMENT_LINE = re.compile(r"^[ \t]*#[^\n]*$", re.M)


@dataclass(frozen=True)
class Fold:
    start: int  # absolute offsets: the fold runs from the line of `start` to the line of `end`
    end: int
    kind: str = ""  # "" (code), "comment", "imports"


def folding_ranges(ws, path: str) -> list:
    f = ws.file(path)
    if f is None:
        return []
    text = f.text
    out = []
    imports = []
    for item in f.items:
        start, end = item_extent(item)
        if isinstance(item, A.ImportItem):
            imports.append((start, end))
            continue
        if "\n" in text[start:end]:
            out.append(Fold(start, end))
        if isinstance(item, A.FnItem):
            for s in A.walk_stmts(item.body):
                s0, s1 = item.offset + s.pos[0], item.offset + s.pos[1]
                if "\n" in text[s0:s1].rstrip():
                    out.append(Fold(s0, s1))
    if len(imports) > 1:
        out.append(Fold(imports[0][0], imports[-1][1], "imports"))
    out.extend(_comment_blocks(text))
    return sorted(out, key=lambda x: (x.start, -x.end))


def _comment_blocks(text: str) -> list:
    """Two or more comment lines in a row."""
    out = []
    run = None
    for m in COMMENT_LINE.finditer(text):
        # consecutive when only the line break separates this line from the last
        if run is not None and text.count("\n", run[1], m.start()) == 1:
            run = (run[0], m.end(), run[2] + 1)
        else:
            if run is not None and run[2] > 1:
                out.append(Fold(run[0], run[1], "comment"))
            run = (m.start(), m.end(), 1)
    if run is not None and run[2] > 1:
        out.append(Fold(run[0], run[1], "comment"))
    return out


def selection_ranges(ws, path: str, offsets: list) -> list:
    """For each offset, [(start, end)] from the innermost syntax node holding it out to
    the item and the whole file, each strictly larger than the one before."""
    f = ws.file(path)
    if f is None:
        return [[] for _ in offsets]
    whole = (0, len(f.text))
    out = []
    for off in offsets:
        spans = []
        item = item_at(f, off)
        if item is not None:
            for node in reversed(chain(item, off - item.offset)):
                spans.append((item.offset + node.pos[0], item.offset + node.pos[1]))
            spans.append(item_extent(item))
        spans.append(whole)
        ranges: list = []
        for s in spans:
            if not ranges or (s[0] <= ranges[-1][0] and s[1] >= ranges[-1][1] and s != ranges[-1]):
                ranges.append(s)
        if not ranges or ranges[0][0] > off or ranges[0][1] < off:
            ranges.insert(0, (off, off))
        out.append(ranges)
    return out
