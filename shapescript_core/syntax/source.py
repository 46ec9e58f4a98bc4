"""Source text and positions: offsets ⇄ 1-based line/column ⇄ LSP's UTF-16 positions."""
from __future__ import annotations

import bisect
import itertools


class LineIndex:
    def __init__(self, text: str):
        self.text = text
        # start of each line: 0, then one past each "\n" (split and accumulate run in C)
        self.starts = list(itertools.accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))

    def line_of(self, offset: int) -> int:
        """0-based line containing offset."""
        return bisect.bisect_right(self.starts, offset) - 1

    def line_col(self, offset: int) -> tuple[int, int]:
        """0-based line, 0-based column in code points."""
        offset = max(0, min(offset, len(self.text)))
        line = self.line_of(offset)
        return line, offset - self.starts[line]

    def line_text(self, line: int) -> str:
        if line < 0 or line >= len(self.starts):
            return ""
        start = self.starts[line]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def offset(self, line: int, col: int) -> int:
        """Offset of a 0-based line and code-point column (clamped)."""
        if line >= len(self.starts):
            return len(self.text)
        line = max(line, 0)
        return min(self.starts[line] + max(col, 0), self._line_end(line))

    def _line_end(self, line: int) -> int:
        end = self.text.find("\n", self.starts[line])
        return len(self.text) if end < 0 else end

    # UTF-16, as LSP requires
    def utf16_position(self, offset: int) -> tuple[int, int]:
        line, col = self.line_col(offset)
        prefix = self.text[self.starts[line]:self.starts[line] + col]
        return line, utf16_len(prefix)

    def offset_utf16(self, line: int, character: int) -> int:
        if line >= len(self.starts):
            return len(self.text)
        line = max(line, 0)
        start = self.starts[line]
        end = self._line_end(line)
        units = 0
        i = start
        while i < end and units < character:
            units += 2 if ord(self.text[i]) > 0xFFFF else 1
            i += 1
        return i


def utf16_len(s: str) -> int:
    if s.isascii():
        return len(s)
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)
