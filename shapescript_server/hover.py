"""textDocument/hover."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import hover as ide_hover

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(ls: ShapeScriptServer, params: T.HoverParams):
        path, text, version = ls.snapshot(params.text_document.uri)
        markdown = ls.markdown

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            h = ide_hover.hover(ls.ws, path, convert.offset(lines, params.position))
            return convert.hover(h, lines, markdown) if h is not None else None

        return await ls.query(job)
