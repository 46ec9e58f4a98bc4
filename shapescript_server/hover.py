"""textDocument/hover."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import hover as ide_hover

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_HOVER)
    def hover(ls: ShapeScriptServer, params: T.HoverParams):
        markdown = ls.markdown

        def answer(path):
            lines = ls.lines_for(path)
            h = ide_hover.hover(ls.ws, path, convert.offset(lines, params.position))
            return convert.hover(h, lines, markdown) if h is not None else None

        return answer
