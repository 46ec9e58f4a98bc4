"""textDocument/definition and textDocument/documentSymbol."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import navigation as ide_nav

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: ShapeScriptServer, params: T.DefinitionParams):
        def answer(path):
            lines = ls.lines_for(path)
            locs = ide_nav.definition(ls.ws, path, convert.offset(lines, params.position))
            return [convert.location(loc, ls.lines_for, ls.docs.uri_for) for loc in locs] or None

        return answer

    @read_request(ls, T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls: ShapeScriptServer, params: T.DocumentSymbolParams):
        uri = params.text_document.uri
        hierarchical = bool(ls.client_supports(
            "text_document.document_symbol.hierarchical_document_symbol_support", False))

        def answer(path):
            lines = ls.lines_for(path)
            syms = ide_nav.document_symbols(ls.ws, path)
            if hierarchical:
                return [convert.document_symbol(s, lines) for s in syms]
            return [x for s in syms for x in convert.symbol_information(s, lines, uri)]

        return answer
