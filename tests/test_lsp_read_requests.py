"""Every read request (shapescript_server/reads.py's `read_request`) fails the same way
when its query fails: the internal error is logged under the handler's name (stderr and
window/logMessage) and answered InternalError, and the server goes on.

Run as a script, this file is that server with every core query of a read request made
to raise."""
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    def _boom(name):
        def raise_(*args, **kwargs):
            raise RuntimeError(f"{name} exploded")
        return raise_

    from shapescript_core.ide import calls, completion, format, hover, inlay, lens, navigation, references, rename
    from shapescript_core.ide import semantic_tokens, structure

    for module, names in ((hover, ["hover"]), (completion, ["completions", "signature_help"]),
                          (navigation, ["definition", "document_symbols"]),
                          (references, ["references", "document_highlight", "type_definition"]),
                          (rename, ["prepare_rename", "rename"]),
                          (inlay, ["inlay_hints"]), (format, ["format_edits"]), (calls, ["prepare"]),
                          (lens, ["export_lenses"]), (semantic_tokens, ["chunks"]),
                          (structure, ["folding_ranges", "selection_ranges"])):
        for name in names:
            setattr(module, name, _boom(f"{module.__name__.rsplit('.', 1)[-1]}.{name}"))

    from shapescript_server.main import main

    sys.exit(main())

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcInternalError
from pytest_lsp import LanguageClient

from lsp_support import config, initialize, open_doc, uri_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

TEXT = "dim D = 4\n\nfn f(x: [b D]) -> [b D]:\n    return x\n"


@pytest_lsp.fixture(config=config([sys.executable, os.path.abspath(__file__)]), scope="module")
async def failing(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def requests(doc: T.TextDocumentIdentifier):
    """(handler name, method, params) of every read request."""
    pos = T.Position(3, 11)
    rng = T.Range(T.Position(0, 0), T.Position(4, 0))
    return [
        ("hover", "text_document_hover_async", T.HoverParams(doc, pos)),
        ("completion", "text_document_completion_async", T.CompletionParams(doc, pos)),
        ("signature_help", "text_document_signature_help_async", T.SignatureHelpParams(doc, pos)),
        ("definition", "text_document_definition_async", T.DefinitionParams(doc, pos)),
        ("document_symbols", "text_document_document_symbol_async", T.DocumentSymbolParams(doc)),
        ("references", "text_document_references_async",
         T.ReferenceParams(text_document=doc, position=pos, context=T.ReferenceContext(include_declaration=True))),
        ("document_highlight", "text_document_document_highlight_async", T.DocumentHighlightParams(doc, pos)),
        ("type_definition", "text_document_type_definition_async", T.TypeDefinitionParams(doc, pos)),
        ("prepare_rename", "text_document_prepare_rename_async", T.PrepareRenameParams(doc, pos)),
        ("rename", "text_document_rename_async", T.RenameParams(text_document=doc, position=pos, new_name="y")),
        ("inlay_hints", "text_document_inlay_hint_async", T.InlayHintParams(text_document=doc, range=rng)),
        ("formatting", "text_document_formatting_async",
         T.DocumentFormattingParams(text_document=doc, options=T.FormattingOptions(tab_size=4, insert_spaces=True))),
        ("range_formatting", "text_document_range_formatting_async",
         T.DocumentRangeFormattingParams(text_document=doc, range=rng,
                                        options=T.FormattingOptions(tab_size=4, insert_spaces=True))),
        ("prepare_call_hierarchy", "text_document_prepare_call_hierarchy_async",
         T.CallHierarchyPrepareParams(doc, pos)),
        ("code_lens", "text_document_code_lens_async", T.CodeLensParams(doc)),
        ("semantic_tokens", "text_document_semantic_tokens_full_async", T.SemanticTokensParams(doc)),
        ("semantic_tokens_delta", "text_document_semantic_tokens_full_delta_async",
         T.SemanticTokensDeltaParams(text_document=doc, previous_result_id="1")),
        ("semantic_tokens_range", "text_document_semantic_tokens_range_async", T.SemanticTokensRangeParams(text_document=doc, range=rng)),
        ("folding_range", "text_document_folding_range_async", T.FoldingRangeParams(doc)),
        ("selection_range", "text_document_selection_range_async", T.SelectionRangeParams(text_document=doc, positions=[pos])),
    ]


async def test_every_read_request_logs_its_failure_and_answers_an_internal_error(failing: LanguageClient, tmp_path):
    client = failing
    uri = uri_of(tmp_path / "reads.ss")
    open_doc(client, uri, TEXT)
    await wait_version(client, uri, 1)
    doc = T.TextDocumentIdentifier(uri)
    for name, method, params in requests(doc):
        with pytest.raises(JsonRpcInternalError, match=f"{name} failed"):
            await getattr(client, method)(params)
        assert any(f"{name} failed" in m.message and "exploded" in m.message
                   and m.type == T.MessageType.Error for m in client.log_messages), name
    # the server goes on: a request whose query did not fail is answered
    assert await client.workspace_symbol_async(T.WorkspaceSymbolParams(query="f")) is not None


async def test_a_document_never_opened_gets_the_missing_answer_without_its_query(failing: LanguageClient, tmp_path):
    """No file: the query (which would fail) is never asked; None, or [] for inlay hints."""
    client = failing
    doc = T.TextDocumentIdentifier(uri_of(tmp_path / "never.ss"))
    for name, method, params in requests(doc):
        got = await getattr(client, method)(params)
        if name == "inlay_hints":
            assert got is not None and len(got) == 0, name  # [] (the client reads it as a tuple)
        else:
            assert got is None, name
