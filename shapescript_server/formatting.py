"""textDocument/formatting and textDocument/rangeFormatting: the core's formatter
(`shapescript fmt`), as the edits of the pieces (items, the gaps between them) that
change. The client's tab size is not asked: the layout is the canonical one."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import format as ide_format

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    def edits(ls, rng=None):
        """The question `read_request` asks: the formatter's edits (of `rng` only, when given)."""
        def answer(path):
            f = ls.ws.file(path)
            lines = ls.lines_for(path)
            span = convert.offsets(lines, rng) if rng is not None else None
            return [convert.piece_edit(p, lines) for p in ide_format.format_edits(f.text, span)]

        return answer

    @read_request(ls, T.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: ShapeScriptServer, params: T.DocumentFormattingParams):
        return edits(ls)

    @read_request(ls, T.TEXT_DOCUMENT_RANGE_FORMATTING)
    def range_formatting(ls: ShapeScriptServer, params: T.DocumentRangeFormattingParams):
        return edits(ls, params.range)
