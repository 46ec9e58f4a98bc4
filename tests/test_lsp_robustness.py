"""No request or text crashes the server: a failing handler logs and answers an error,
malformed requests get an error answer, any text gets answers, and the server goes on."""
from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcInternalError
from pytest_lsp import LanguageClient

from lsp_support import config, initialize, open_doc, position, uri_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")
HERE = os.path.dirname(os.path.abspath(__file__))

NASTY = [
    "",
    "\x00\x01\x02",
    "fn",
    "fn f(",
    "dim",
    "dim D = D",
    "model M:\n    m: M\n",
    "@export(hf)\n",
    "@@@@\n" * 3,
    "(" * 3000 + "\n",
    "fn f(x: [b]) -> [b]:\n    return " + "(" * 2000 + "x" + ")" * 2000 + "\n",
    "fn f(x: [b]) -> [b]:\n    return " + "-" * 3000 + "x\n",
    "fn f(x: [b]) -> [b]:\n\treturn x\n  \treturn x\n",
    "fn f(x: [b D]) -> [b D]:\r\n    return x\r\n",
    "dim D = 4\rfn f(x: [b D]) -> [b D]:\r    return x\r",
    "import \"nowhere.ss\"\nimport \"\"\nimport \"/\"\n",
    "import \"self.ss\"\n",
    "fn f(x: [b D]) -> [b D]:\n    return x |> |> |>\n",
    "# 😀\u2028\u2029\x0b\x0c\x1c\x85 comment\nfn 𝔸(σ: [b]) -> [b]:\n    return σ\n",
    "fn f(x: [b]) -> [b]:\n    return x\n" * 200,
    "x" * 20000,
    "\ud800 lone surrogate \udfff\n",
]


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def every_request(client: LanguageClient, uri: str, text: str):
    """Ask everything at a few positions; every answer must come without an error."""
    doc = T.TextDocumentIdentifier(uri)
    lines = text.split("\n")
    spots = [T.Position(0, 0), position(text, len(text)), position(text, len(text) // 2),
             T.Position(len(lines) + 5, 3), T.Position(0, 10 ** 6)]
    for pos in spots:
        await client.text_document_hover_async(T.HoverParams(doc, pos))
        await client.text_document_definition_async(T.DefinitionParams(doc, pos))
        await client.text_document_completion_async(T.CompletionParams(doc, pos))
        await client.text_document_signature_help_async(T.SignatureHelpParams(doc, pos))
        await client.text_document_code_action_async(T.CodeActionParams(
            doc, T.Range(pos, pos), T.CodeActionContext(diagnostics=[])))
    whole = T.Range(T.Position(0, 0), T.Position(len(lines) + 1, 0))
    await client.text_document_inlay_hint_async(T.InlayHintParams(doc, whole))
    await client.text_document_document_symbol_async(T.DocumentSymbolParams(doc))
    await client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(doc))
    await client.text_document_code_lens_async(T.CodeLensParams(doc))


@pytest.mark.parametrize("k", range(len(NASTY)))
async def test_any_text_gets_answers(client: LanguageClient, tmp_path, k):
    uri = uri_of(tmp_path / f"nasty{k}.ss")
    text = NASTY[k]
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    await every_request(client, uri, text)


async def test_documents_never_opened_get_empty_answers(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "never.ss")
    assert await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri), T.Position(0, 0))) is None
    await every_request(client, uri, "")
    await every_request(client, "untitled:Untitled-1", "")


@pytest_lsp.fixture(config=config([sys.executable, os.path.join(HERE, "lsp_failing_server.py")]), scope="module")
async def failing(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_failing_handler_logs_answers_an_error_and_the_server_goes_on(failing: LanguageClient, tmp_path):
    client = failing
    text = "dim D = 4\n\nfn f(x: [b D]) -> [b D]:\n    return x\n"
    uri = uri_of(tmp_path / "ok.ss")
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    with pytest.raises(JsonRpcInternalError):
        await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri), T.Position(3, 11)))
    assert any("hover failed" in m.message and "hover exploded" in m.message for m in client.log_messages)
    # other requests still work
    res = await client.text_document_definition_async(T.DefinitionParams(T.TextDocumentIdentifier(uri),
                                                                         T.Position(3, 11)))
    assert res[0].range.start == T.Position(2, 5)
    # a failing notification handler, and a failing core job: logged, dropped
    open_doc(client, uri_of(tmp_path / "boom.ss"), text)
    open_doc(client, uri_of(tmp_path / "corefail.ss"), text)

    def messages() -> str:
        return "\n".join(m.message for m in client.log_messages)

    deadline = time.monotonic() + 15  # a failure is logged, not published: looked for
    while "the core exploded" not in messages() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    uri2 = uri_of(tmp_path / "ok2.ss")
    open_doc(client, uri2, text)
    await wait_version(client, uri2, 1)  # and the server goes on
    assert "check exploded" in messages() and "the core exploded" in messages()
    assert not [p for p in client.publishes if "boom" in p.uri or "corefail" in p.uri]
