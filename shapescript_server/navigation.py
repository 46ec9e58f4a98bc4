"""textDocument/definition and textDocument/documentSymbol."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import navigation as ide_nav

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_DEFINITION)
    @guarded()
    async def definition(ls: ShapeScriptServer, params: T.DefinitionParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            locs = ide_nav.definition(ls.ws, path, convert.offset(lines, params.position))
            return [convert.location(loc, ls.lines_for, ls.docs.uri_for) for loc in locs] or None

        return await ls.query(job)

    @ls.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded()
    async def document_symbols(ls: ShapeScriptServer, params: T.DocumentSymbolParams):
        uri = params.text_document.uri
        path, text, version = ls.snapshot(uri)
        hierarchical = bool(ls.client_supports(
            "text_document.document_symbol.hierarchical_document_symbol_support", False))

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            syms = ide_nav.document_symbols(ls.ws, path)
            if hierarchical:
                return [convert.document_symbol(s, lines) for s in syms]
            return [x for s in syms for x in convert.symbol_information(s, lines, uri)]

        return await ls.query(job)
