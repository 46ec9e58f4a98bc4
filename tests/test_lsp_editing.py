"""Rename, references, highlight, type definition, formatting, folding, selection
ranges, workspace symbols, call hierarchy and semantic tokens by range and delta, end to
end through the protocol (one server for the module, a project folder on disk: one file
open, one importing file only on disk)."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import at, config, initialize, open_doc, uri_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIB = """\
dim D = 64

model Attn:
    wq: [D D]

fn helper(a: Attn, x: [b n D]) -> [b n D]:
    return linear(x, a.wq)
"""

MAIN = """\
import "lib.ss"

model Net:
    attn: Attn
    layers: [2] Attn

fn encode(m: Net, x: [b n D]) -> [b n D]:
    y = helper(m.attn, x)
    for layer in m.layers:
        y = helper(layer, y)
    return y
"""

USER = """\
import "../lib.ss"

fn twice(a: Attn, x: [b n D]) -> [b n D]:
    return helper(a, helper(a, x))
"""


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    root = tempfile.mkdtemp(prefix="shapescript-editing-")
    os.mkdir(os.path.join(root, "sub"))
    for name, text in (("lib.ss", LIB), ("main.ss", MAIN), ("sub/user.ss", USER)):
        with open(os.path.join(root, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    lsp_client.root = root
    lsp_client.init_result = await initialize(lsp_client, root=root)
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(root, ignore_errors=True)


@pytest_asyncio.fixture(loop_scope="module")
async def main(client: LanguageClient):
    uri = uri_of(os.path.join(client.root, "main.ss"))
    if uri not in client.diagnostics:
        open_doc(client, uri, MAIN)
        assert not (await wait_version(client, uri, 1)).diagnostics
    return uri


def _doc(uri, pos):
    return T.TextDocumentIdentifier(uri), pos


async def test_rename_edits_every_file_that_imports_the_definition(client: LanguageClient, main):
    caps = client.init_result.capabilities
    assert caps.rename_provider.prepare_provider is True
    pos = at(MAIN, "helper(layer", 2)
    prep = await client.text_document_prepare_rename_async(T.PrepareRenameParams(*_doc(main, pos)))
    assert prep.placeholder == "helper"
    assert prep.range.start == at(MAIN, "helper(layer")
    edit = await client.text_document_rename_async(T.RenameParams(*_doc(main, pos), new_name="assist"))
    by_uri = {e.text_document.uri: e for e in edit.document_changes}
    root = client.root
    assert sorted(by_uri) == sorted(uri_of(os.path.join(root, p)) for p in ("lib.ss", "main.ss", "sub/user.ss"))
    assert by_uri[main].text_document.version == 1  # open: versioned
    assert by_uri[uri_of(os.path.join(root, "lib.ss"))].text_document.version is None  # on disk
    assert len(by_uri[main].edits) == 2 and len(by_uri[uri_of(os.path.join(root, "sub/user.ss"))].edits) == 2
    for e in by_uri[main].edits:
        assert e.new_text == "assist"
        line = MAIN.splitlines()[e.range.start.line]
        assert line[e.range.start.character:e.range.end.character] == "helper"


async def test_a_colliding_rename_is_refused_with_a_message(client: LanguageClient, main):
    pos = at(MAIN, "helper(layer", 2)
    with pytest.raises(Exception) as info:
        await client.text_document_rename_async(T.RenameParams(*_doc(main, pos), new_name="encode"))
    assert "can't rename `helper` to `encode`: `encode` is already defined" in str(info.value)
    with pytest.raises(Exception) as info:
        await client.text_document_prepare_rename_async(T.PrepareRenameParams(*_doc(main, at(MAIN, "return y"))))
    assert "`return` is a keyword: it can't be renamed" in str(info.value)


async def test_references_and_highlight(client: LanguageClient, main):
    pos = at(MAIN, "m.attn", 3)
    refs = await client.text_document_references_async(T.ReferenceParams(
        context=T.ReferenceContext(include_declaration=True), text_document=T.TextDocumentIdentifier(main),
        position=pos))
    got = sorted((r.uri.rsplit("/", 1)[-1], r.range.start.line) for r in refs)
    assert got == [("main.ss", 3), ("main.ss", 7)]
    marks = await client.text_document_document_highlight_async(T.DocumentHighlightParams(
        *_doc(main, at(MAIN, "return y", 7))))
    assert [(h.range.start.line, h.kind) for h in marks] == [
        (7, T.DocumentHighlightKind.Write), (9, T.DocumentHighlightKind.Write), (9, T.DocumentHighlightKind.Read),
        (10, T.DocumentHighlightKind.Read)]


async def test_type_definition_goes_to_the_model(client: LanguageClient, main):
    locs = await client.text_document_type_definition_async(T.TypeDefinitionParams(
        *_doc(main, at(MAIN, "helper(layer", 8))))
    (loc,) = locs if isinstance(locs, list) else [locs]
    assert loc.uri.endswith("/lib.ss") and loc.range.start == T.Position(2, 6)
