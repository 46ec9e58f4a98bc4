"""An open document's text as the client sees it, with LSP's incremental changes applied
(positions in UTF-16) and its line starts kept without a rescan. Free of pygls: the fast
start (fast_start.py) applies the changes typed before the server is loaded."""
from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass, field
from typing import Optional

from shapescript_core.syntax.source import line_starts, offsets_array


@dataclass
class Document:
    uri: str
    path: str
    text: str
    version: Optional[int]
    starts: array = field(default_factory=lambda: array("I"))  # offset of each line's start

    def __post_init__(self):
        if not self.starts:
            self.starts = line_starts(self.text)

    def offset(self, line: int, character: int) -> int:
        """The code-point offset of an LSP position (UTF-16 units), clamped to the text."""
        starts, text = self.starts, self.text
        if line >= len(starts):
            return len(text)
        line = max(line, 0)
        start = starts[line]
        end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
        seg = text[start:end]
        if seg.isascii():
            return start + min(max(character, 0), len(seg))
        units = i = 0
        while i < len(seg) and units < character:
            units += 2 if ord(seg[i]) > 0xFFFF else 1
            i += 1
        return start + i

    def replace(self, start: int, end: int, new: str):
        """Replace text[start:end], keeping the line starts without a rescan."""
        if "\r" in new or "\r" in self.text:  # a \r joins or splits line breaks: rescan
            self.text = self.text[:start] + new + self.text[end:]
            self.starts = line_starts(self.text)
            return
        starts = self.starts
        la = bisect.bisect_right(starts, start) - 1
        lb = bisect.bisect_right(starts, end) - 1
        delta = len(new) - (end - start)
        added = offsets_array(len(self.text) + delta)
        if "\n" in new:
            added.extend(start + i + 1 for i, ch in enumerate(new) if ch == "\n")
        added.extend(map(delta.__add__, starts[lb + 1:]))
        if added.typecode == starts.typecode:
            starts[la + 1:] = added
        else:  # past 4 GiB: wider offsets
            self.starts = offsets_array(len(self.text) + delta)
            self.starts.extend(iter(starts[:la + 1]))
            self.starts.extend(added)
        self.text = self.text[:start] + new + self.text[end:]

    def apply(self, rng: Optional[tuple], new: str):
        """One content change: `rng` (start line, start character, end line, end
        character, in UTF-16 units) replaced by `new`; None: `new` is the whole text."""
        if rng is None:
            self.text = new
            self.starts = line_starts(new)
            return
        start = self.offset(rng[0], rng[1])
        end = self.offset(rng[2], rng[3])
        if end < start:
            start, end = end, start
        self.replace(start, end, new)
