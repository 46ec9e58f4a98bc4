"""Keystrokes sent without waiting, with hovers and completions in between: the last
version is published and equals a fresh check of its text; a request about a version
the client has moved past is answered ContentModified, never with an internal error."""
from __future__ import annotations

import asyncio
import os

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_support import ROOT, as_json, config, fresh, initialize, open_doc, position, replace, uri_of, wait_version

LLAMA = open(os.path.join(ROOT, "examples", "llama.ss"), encoding="utf-8").read()
CONTENT_MODIFIED = -32801

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def send(client: LanguageClient, method: str, params):
    """Send a request now, between the notifications around it (the `…_async` methods
    would send it only when awaited); its answer is a future."""
    return asyncio.wrap_future(client.protocol.send_request(method, params))


def answered(task) -> str:
    """'result' or 'content modified'; anything else fails the test."""
    exc = task.exception()
    if exc is None:
        return "result"
    assert isinstance(exc, JsonRpcException) and exc.code == CONTENT_MODIFIED, repr(exc)
    return "content modified"


async def test_a_burst_publishes_its_last_version_as_a_fresh_check(client: LanguageClient, tmp_path):
    path = str(tmp_path / "llama.ss")
    uri = uri_of(path)
    text = LLAMA
    open_doc(client, uri, text, version=1)
    await wait_version(client, uri, 1)
    # type a new line into the first function body, one character a change, without
    # waiting; a hover and a completion after every fourth
    body = text.index(":\n", text.index("\nfn ")) + 2
    typed = "    _w = silu(x) + x\n"
    version, requests = 1, []
    for k, ch in enumerate(typed):
        version += 1
        text = replace(client, uri, version, text, body + k, body + k, ch)
        if k % 4 == 3:
            pos = position(text, body + k + 1)
            doc = T.TextDocumentIdentifier(uri=uri)
            requests.append(send(client, T.TEXT_DOCUMENT_HOVER, T.HoverParams(text_document=doc, position=pos)))
            requests.append(send(client, T.TEXT_DOCUMENT_COMPLETION,
                                 T.CompletionParams(text_document=doc, position=pos)))
    last = await wait_version(client, uri, version, timeout=30)
    await asyncio.wait(requests, timeout=30)
    assert all(r.done() for r in requests)
    kinds = [answered(r) for r in requests]
    # a request after the burst is answered from the last version, and comes back after
    # any publish still under way: nothing older is published after the last version
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=position(text, body + 5)))
    assert hover is not None and "_w" in hover.contents.value
    mine = [p for p in client.publishes if p.uri == uri]
    assert mine[-1].version == version == len(typed) + 1
    assert [p.version for p in mine] == sorted(p.version for p in mine)  # never back
    assert as_json(last.diagnostics) == fresh({path: text}, path, {path: version})
    assert set(kinds) <= {"result", "content modified"}


async def test_a_request_about_a_version_moved_past_is_content_modified(tmp_path):
    """A request's job that starts after the client sent a newer change answers
    ContentModified (a pipe can't time this reliably: pygls takes a request's snapshot
    when its handler first runs, which may already be after the next change)."""
    from shapescript_server.app import ShapeScriptServer
    from pygls.exceptions import JsonRpcContentModified
    ls = ShapeScriptServer()
    try:
        uri = uri_of(tmp_path / "small.ss")
        ls.docs.open(uri, LLAMA, 1)
        path, text, version = ls.snapshot(uri)
        assert ls.sync(path, text, version) and ls.ws.files[path].text == LLAMA
        at = LLAMA.index("return ")
        ls.docs.change(uri, [T.TextDocumentContentChangePartial(
            range=T.Range(start=position(LLAMA, at), end=position(LLAMA, at)), text=" ")], 2)
        with pytest.raises(JsonRpcContentModified):
            ls.sync(path, text, version)  # the snapshot of version 1
        assert ls.ws.files[path].version == 1  # nothing was checked for it
        path, text, version = ls.snapshot(uri)
        assert ls.sync(path, text, version) and ls.ws.files[path].version == 2
    finally:
        ls.shutdown_core()
