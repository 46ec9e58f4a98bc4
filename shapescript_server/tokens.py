"""textDocument/semanticTokens/full: names coloured by what they are.

The core keeps each item's tokens while the item is unchanged; this module keeps each
item's LSP encoding alongside, so a request after an edit re-encodes the edited item
and stitches the rest."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import tokens as ide_tokens

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer

LEGEND = T.SemanticTokensLegend(token_types=ide_tokens.TYPES, token_modifiers=ide_tokens.MODIFIERS)


def encode(ls: ShapeScriptServer, path: str) -> T.SemanticTokens:
    """On the core thread."""
    cache = ls.token_cache.get(path, {})
    fresh: dict = {}
    lines = ls.lines_for(path)
    out = []
    for start, text, toks in ide_tokens.chunks(ls.ws, path):
        hit = cache.get(id(toks))
        if hit is None or hit[0] is not toks:
            hit = (toks, convert.semantic_tokens_chunk(text, toks, ide_tokens.TYPES, ide_tokens.MODIFIERS))
        fresh[id(toks)] = hit
        out.append((lines.line_of(start), hit[1]))
    ls.token_cache[path] = fresh
    return convert.stitch(out)


def register(ls: ShapeScriptServer):
    ls.token_cache = {}  # path -> {id(tokens): (tokens, encoding)}

    @ls.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded()
    async def semantic_tokens(ls: ShapeScriptServer, params: T.SemanticTokensParams):
        path, text, version = ls.snapshot(params.text_document.uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            return encode(ls, path)

        return await ls.query(job)
