"""What a large file opened cold shows before its check is done.

A file of EARLY_ITEMS items or more, opened cold, has its syntax errors published as
soon as it is parsed, before the check (then the complete diagnostics, same version:
diagnostics.schedule_check). Before even that, at its didOpen, the server publishes
the syntax errors of the items an editor shows first: those that start in the first
VISIBLE_LINES lines (an editor opens a file at its top; LSP doesn't say which lines are
visible), for the check of a document waits behind those of the documents opened
before it (diagnostics.show_first_lines); at the first start of a session fast_start.py
does it before pygls is loaded. Each publish replaces the one before it, and the last
one is the check's. A smaller file is checked before anyone could see the
difference. No lsprotocol, no pygls (fast_start.py runs before they are loaded).
"""
from __future__ import annotations

from shapescript_core.syntax.parser import count_items, parse_head, syntax_errors
from shapescript_core.syntax.source import LineIndex, normalize_newlines

from . import diagnostics_json

EARLY_ITEMS = 200
VISIBLE_LINES = 120  # a tall editor window: 60–90 lines; twice that for a scroll right away


def is_large(item_count: int) -> bool:
    return item_count >= EARLY_ITEMS


def visible_syntax(text: str, path: str, uri: str, version) -> list | None:
    """The syntax diagnostics (LSP JSON) of the items in a large file's first
    VISIBLE_LINES lines; None for a smaller file."""
    text = normalize_newlines(text)  # as the workspace parses it: same offsets
    if not is_large(count_items(text, EARLY_ITEMS)):
        return None
    lines = LineIndex(text)
    limit = lines.offset(VISIBLE_LINES, 0)  # the end of the text in a shorter file
    items = parse_head(text, path, limit)
    return diagnostics_json.diagnostics(syntax_errors(items), path, lambda p: lines,
                                        lambda p: uri, lambda u: version if u == uri else None)
