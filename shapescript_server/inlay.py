"""textDocument/inlayHint: the shape after each assignment."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import inlay as ide_inlay

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=False))
    @guarded()
    async def inlay_hints(ls: ShapeScriptServer, params: T.InlayHintParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return []
            lines = ls.lines_for(path)
            start, end = convert.offsets(lines, params.range)
            return [convert.inlay_hint(h, lines) for h in ide_inlay.inlay_hints(ls.ws, path, start, end)]

        return await ls.query(job)
