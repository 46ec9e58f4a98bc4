"""textDocument/inlayHint: the shape after each assignment."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import inlay as ide_inlay

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=False), missing=[])
    def inlay_hints(ls: ShapeScriptServer, params: T.InlayHintParams):
        def answer(path):
            lines = ls.lines_for(path)
            start, end = convert.offsets(lines, params.range)
            return [convert.inlay_hint(h, lines) for h in ide_inlay.inlay_hints(ls.ws, path, start, end)]

        return answer
