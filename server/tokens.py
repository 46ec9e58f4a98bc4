"""textDocument/semanticTokens/full: names coloured by what they are."""
from __future__ import annotations

from lsprotocol import types as T

from shapescript_core.ide import tokens as ide_tokens

from . import convert
from .app import ShapeScriptServer, guarded

LEGEND = T.SemanticTokensLegend(token_types=ide_tokens.TYPES, token_modifiers=ide_tokens.MODIFIERS)


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded()
    async def semantic_tokens(ls: ShapeScriptServer, params: T.SemanticTokensParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            toks = ide_tokens.semantic_tokens(ls.ws, path)
            return convert.semantic_tokens(toks, ls.lines_for(path), ide_tokens.TYPES, ide_tokens.MODIFIERS)

        return await ls.query(job)
