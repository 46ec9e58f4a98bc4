"""textDocument/foldingRange and textDocument/selectionRange."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import structure as ide_structure

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_FOLDING_RANGE)
    def folding_range(ls: ShapeScriptServer, params: T.FoldingRangeParams):
        def answer(path):
            lines = ls.lines_for(path)
            folds = (convert.folding_range(f, lines) for f in ide_structure.folding_ranges(ls.ws, path))
            return [f for f in folds if f is not None]

        return answer

    @read_request(ls, T.TEXT_DOCUMENT_SELECTION_RANGE)
    def selection_range(ls: ShapeScriptServer, params: T.SelectionRangeParams):
        def answer(path):
            lines = ls.lines_for(path)
            offsets = [convert.offset(lines, p) for p in params.positions]
            return [convert.selection_range(r, lines) for r in ide_structure.selection_ranges(ls.ws, path, offsets)]

        return answer
