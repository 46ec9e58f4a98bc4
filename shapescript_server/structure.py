"""textDocument/foldingRange and textDocument/selectionRange."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import structure as ide_structure

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded()
    async def folding_range(ls: ShapeScriptServer, params: T.FoldingRangeParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            folds = (convert.folding_range(f, lines) for f in ide_structure.folding_ranges(ls.ws, path))
            return [f for f in folds if f is not None]

        return await ls.query(job)

    @ls.feature(T.TEXT_DOCUMENT_SELECTION_RANGE)
    @guarded()
    async def selection_range(ls: ShapeScriptServer, params: T.SelectionRangeParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            offsets = [convert.offset(lines, p) for p in params.positions]
            return [convert.selection_range(r, lines) for r in ide_structure.selection_ranges(ls.ws, path, offsets)]

        return await ls.query(job)
