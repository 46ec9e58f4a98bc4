"""textDocument/semanticTokens/full, /full/delta and /range: names coloured by what
they are.

The core keeps each item's tokens while the item is unchanged; this module keeps each
item's LSP encoding alongside, so a request after an edit re-encodes the edited item
and stitches the rest. Every full answer has a result id; a delta request against the
last one gets the one edit that turns its data into the new data (the changed middle).
A range request gets the tokens of the items (and gaps) the range touches."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import semantic_tokens as ide_tokens

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer

LEGEND = T.SemanticTokensLegend(token_types=ide_tokens.TYPES, token_modifiers=ide_tokens.MODIFIERS)


def encode(ls: ShapeScriptServer, path: str, span=None) -> T.SemanticTokens:
    """On the core thread. `span`: (start, end) offsets; only the chunks it touches."""
    cache = ls.token_cache.get(path, {})
    fresh: dict = {}
    lines = ls.lines_for(path)
    out = []
    for start, text, toks in ide_tokens.chunks(ls.ws, path):
        hit = cache.get(id(toks))
        if hit is None or hit[0] is not toks:
            hit = (toks, convert.semantic_tokens_chunk(text, toks, ide_tokens.TYPES, ide_tokens.MODIFIERS))
        fresh[id(toks)] = hit
        if span is None or (start <= span[1] and span[0] <= start + len(text)):
            out.append((lines.line_of(start), hit[1]))
    if span is None:
        ls.token_cache[path] = fresh
    return convert.stitch(out)


def register(ls: ShapeScriptServer):
    ls.token_cache = {}  # path -> {id(tokens): (tokens, encoding)}
    ls.token_results = {}  # uri -> (result id, data) of the last full answer
    ids = iter(range(1, 1 << 62))

    def full(ls, uri, path):
        result = encode(ls, path)
        result.result_id = str(next(ids))
        ls.token_results[uri] = (result.result_id, result.data)
        return result

    @read_request(ls, T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    def semantic_tokens(ls: ShapeScriptServer, params: T.SemanticTokensParams):
        uri = params.text_document.uri
        return lambda path: full(ls, uri, path)

    @read_request(ls, T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA, LEGEND)
    def semantic_tokens_delta(ls: ShapeScriptServer, params: T.SemanticTokensDeltaParams):
        uri = params.text_document.uri

        def answer(path):
            last = ls.token_results.get(uri)
            result = full(ls, uri, path)
            if last is None or last[0] != params.previous_result_id:
                return result  # a full answer: the client's base is not ours any more
            return T.SemanticTokensDelta(result_id=result.result_id, edits=convert.tokens_delta(last[1], result.data))

        return answer

    @read_request(ls, T.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    def semantic_tokens_range(ls: ShapeScriptServer, params: T.SemanticTokensRangeParams):
        return lambda path: encode(ls, path, convert.offsets(ls.lines_for(path), params.range))
