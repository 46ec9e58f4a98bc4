"""A file's text and its items (SourceFile), and the pause of the cycle collector while
parsing and checking (`_no_gc`)."""
from __future__ import annotations

import bisect
import contextlib
import gc
from typing import Optional
from ..syntax import ast as A
from ..syntax import parse_cache
from ..syntax.parser import changed_range, parse_file, reparse_file, syntax_errors
from ..syntax.source import LineIndex, normalize_newlines, shifted



@contextlib.contextmanager
def _no_gc():
    """Parsing and checking allocate many small objects and no cycles worth collecting
    on the way: pausing the cycle collector meanwhile cuts the time by a third. Once the
    batches since the last freeze made many objects (a cold parse; a cold open's bodies,
    parsed and checked a file at a time), what was made is frozen out of the
    collector's sight, so neither re-enabling it nor later keystrokes walk the whole
    syntax tree."""
    enabled = gc.isenabled()
    gc.disable()
    start = gc.get_count()[0]
    try:
        yield
    finally:
        _made[0] += max(0, gc.get_count()[0] - start)
        if _made[0] > FREEZE_AFTER:
            gc.freeze()
            _made[0] = 0
        if enabled:
            gc.enable()


FREEZE_AFTER = 100_000  # objects made by the batches since the last freeze


_made = [0]  # (a nested batch counts twice: it freezes sooner, which is harmless)


class Cancelled(Exception):
    """An analysis stopped because its caller no longer wants it (`analyze(cancelled=…)`)."""


PARSE_STEP = 64  # bodies parsed between two looks at `cancelled` (about 20 ms)


def item_syntax_errors(items: list, cancelled=None, path: str = "") -> list:
    """The syntax and layout errors of these items, their function bodies parsed now if
    they were not; `cancelled()`, when given, asked every PARSE_STEP items: True stops it
    by raising `Cancelled` (the bodies parsed so far stay parsed)."""
    if cancelled is None:
        with _no_gc():
            return syntax_errors(items)
    out: list = []
    for k in range(0, len(items), PARSE_STEP):
        if cancelled():
            raise Cancelled(path)
        with _no_gc():
            out.extend(syntax_errors(items[k:k + PARSE_STEP]))
    return out


class SourceFile:
    decode_error: Optional[str] = None  # read from disk, not UTF-8: where the first bad byte is
    _imports: Optional[tuple] = None  # (items, root, [(ImportItem, path)]): Workspace._import_targets
    fresh: frozenset | set = frozenset()  # ids of the items the last change of text parsed anew (none at a first parse)

    def __init__(self, path: str, text: str, version: Optional[int] = None, cached: bool = False,
                 interface: bool = False):
        """`interface`: functions parsed at interface depth (parser.parse_interface), their
        bodies when read: a file read for what it declares (an import) parses about a
        third of its text; its check reads, so parses, all of them."""
        self.path = path
        self.version = version
        self.text = ""
        self.items: list[A.Item] = []
        self.lines = LineIndex("")
        if cached:  # the items saved for this path by an earlier session, reused by their text
            text = normalize_newlines(text)
            with _no_gc():
                self.items = parse_file(text, path, parse_cache.load(path), interface)
            self.lines = LineIndex(text)
            self.text = text
        else:
            self.set_text(text, version, interface)

    def set_text(self, text: str, version: Optional[int] = None, interface: bool = False):
        text = normalize_newlines(text)  # a bare \r ends a line, as in LSP: same offsets
        before = self.items
        with _no_gc():
            self.items = reparse_file(before, self.text, text, self.path, interface)
        if text != self.text:  # the items this text parsed anew: an edit's (Analyzer._early)
            kept = set(map(id, before))
            self.fresh = {id(it) for it in self.items if id(it) not in kept} if before else frozenset()
        self.lines = _lines_after(self.text, self.lines, text)
        self.text = text
        self.version = version


def _lines_after(old: str, lines: LineIndex, text: str) -> LineIndex:
    """The line index of `text`, from the one of `old`: an edit that neither removes nor
    adds a line break keeps the line starts (shifted after it), without a rescan and,
    for a same-length edit (a typed-over character), without a new list."""
    if not old or not lines.starts:
        return LineIndex(text)
    p, old_end, new_end = changed_range(old, text)
    gone, added = old[p:old_end], text[p:new_end]
    if "\n" in gone or "\r" in gone or "\n" in added or "\r" in added or \
            (p > 0 and old[p - 1] == "\r"):
        return LineIndex(text)
    delta = new_end - old_end
    starts = lines.starts
    if delta:
        starts = shifted(starts, bisect.bisect_right(starts, p), delta)
    out = LineIndex.__new__(LineIndex)
    out.text, out.starts = text, starts
    return out
