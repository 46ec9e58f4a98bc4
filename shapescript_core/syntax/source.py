"""Source text and positions: offsets ⇄ 1-based line/column ⇄ LSP's UTF-16 positions."""
from __future__ import annotations

import bisect
import itertools
import re
from array import array


_BREAK = re.compile(r"\r\n?|\n")
_BARE_CR = re.compile(r"\r(?!\n)")


def normalize_newlines(text: str) -> str:
    """The text with each bare `\r` (a line end, as LSP counts lines) made a `\n`: the
    same length, so every offset stays, and the parser knows one line end less."""
    return _BARE_CR.sub("\n", text) if "\r" in text else text


def offsets_array(largest: int) -> array:
    """An empty array for offsets up to `largest`: 4 bytes each (8 past 4 GiB), not a
    list of int objects (a file of twenty million blank lines)."""
    return array("I" if largest < 1 << 32 else "q")


def line_starts(text: str) -> array:
    """The offset of each line's start, in an array (`offsets_array`)."""
    out = offsets_array(len(text))
    out.append(0)
    if "\r" in text:
        out.extend(m.end() for m in _BREAK.finditer(text))
        return out
    # one past each "\n", into an array made at its full size (grown a step at a time,
    # the reallocations of twenty million blank lines' array left 90 MB behind): each
    # chunk of the text split at once, the lengths accumulated in C; a line that
    # crosses a chunk's end ends in the next one
    out *= text.count("\n") + 1
    at = 1
    for lo in range(0, len(text), _CHUNK):
        part = offsets_array(len(text))
        ends = itertools.accumulate(map((1).__add__, map(len, text[lo:lo + _CHUNK].split("\n")[:-1])), initial=lo)
        next(ends)
        part.extend(ends)
        out[at:at + len(part)] = part
        at += len(part)
    return out


_CHUNK = 1 << 20


def shifted(starts: array, k: int, delta: int) -> array:
    """The line starts with those from index k on moved by delta."""
    out = offsets_array(starts[-1] + delta)
    head = starts[:k]
    out.extend(head if head.typecode == out.typecode else iter(head))
    out.extend(map(delta.__add__, starts[k:]))
    return out


class LineIndex:
    """Line starts of a text. A line ends at `\n`, `\r\n` or a bare `\r`, as in LSP (and
    as Python's universal newlines read a file, so the CLI and the server agree)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = line_starts(text)

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
        return self.text[self.starts[line]:self._line_end(line)]

    def offset(self, line: int, col: int) -> int:
        """Offset of a 0-based line and code-point column (clamped)."""
        if line >= len(self.starts):
            return len(self.text)
        line = max(line, 0)
        return min(self.starts[line] + max(col, 0), self._line_end(line))

    def _line_end(self, line: int) -> int:
        """Where the line's text ends: before its line break."""
        if line + 1 >= len(self.starts):
            return len(self.text)
        end = self.starts[line + 1]
        text = self.text
        if text[end - 1] == "\n":
            end -= 1
            if end > self.starts[line] and text[end - 1] == "\r":
                end -= 1
        elif text[end - 1] == "\r":
            end -= 1
        return end

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


def decode_source(data: bytes) -> tuple[str, str | None]:
    """A file's text from its bytes: UTF-8, a byte order mark at the start dropped (as
    Python and editors do, so positions agree with the editor's). For bytes that are not
    UTF-8: the text with replacement characters, and where the first bad byte is, as
    "byte 0xff at line 3, column 5" (1-based)."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        text = data.decode("utf-8-sig", errors="replace")
        good = data[:e.start].decode("utf-8-sig", errors="replace")
        line = good.count("\n") + 1
        col = len(good) - (good.rfind("\n") + 1) + 1
        return text, f"byte 0x{data[e.start]:02x} at line {line}, column {col}"
