"""Code actions: the fixes the diagnostics carry, as quick fixes with WorkspaceEdits."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import (codes, config, initialize, open_doc, position, uri_of,
                         wait_until, wait_version)
from shapescript_core.syntax.source import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIB = """\
dim D = 64
dim C = 10

model Classifier:
    w: [C D]

@export(hf)
fn classify(x: [b D], m: Classifier) -> [b C]:
    return linear(x, m.w)
"""

MAIN = """\
import "lib.ss"

fn run(m: Classifier, x: [b D]) -> [b C]:
    return classify(x, m)
"""


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def apply(text: str, edits) -> str:
    lines = LineIndex(text)
    spans = [(lines.offset_utf16(e.range.start.line, e.range.start.character),
              lines.offset_utf16(e.range.end.line, e.range.end.character), e.new_text) for e in edits]
    for s, e, new in sorted(spans, reverse=True):
        text = text[:s] + new + text[e:]
    return text


async def actions(client, uri, diag, only=None, diagnostics=None, rng=None):
    return await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri), range=rng or diag.range,
        context=T.CodeActionContext(diagnostics=[diag] if diagnostics is None else diagnostics, only=only)))


async def test_quick_fix_spans_the_importing_file(client: LanguageClient, tmp_path):
    lib, main = uri_of(tmp_path / "lib.ss"), uri_of(tmp_path / "main.ss")
    open_doc(client, lib, LIB, version=3)
    open_doc(client, main, MAIN, version=8)
    await wait_version(client, main, 8)

    # opening main.ss, which calls `classify`, republishes lib.ss: its fix now reaches
    # main.ss. That publish comes after main.ss's own (and lib.ss's first one before it
    # reaches nowhere else): wait for the one that carries it, not the latest at hand.
    def reaching_main():
        for q in reversed(client.publishes):
            if q.uri == lib and q.diagnostics and any(
                    main in f["edits"] for d in q.diagnostics for f in (d.data or {}).get("fixes", [])):
                return q
        return None

    p = await wait_until(client, reaching_main, what="lib.ss's publish whose fix reaches main.ss")
    assert p.version == 3 and codes(p) == ["E3306"]
    (action,) = await actions(client, lib, p.diagnostics[0])
    assert action.title == "Make `m` the first parameter"
    assert action.kind == T.CodeActionKind.QuickFix and action.is_preferred
    assert action.diagnostics[0].code == "E3306"
    edits = {dc.text_document.uri: dc for dc in action.edit.document_changes}
    assert set(edits) == {lib, main}
    assert edits[lib].text_document.version == 3 and edits[main].text_document.version == 8
    new_lib = apply(LIB, edits[lib].edits)
    new_main = apply(MAIN, edits[main].edits)
    assert "fn classify(m: Classifier, x: [b D]) -> [b C]:" in new_lib
    assert "return classify(m, x)" in new_main
    # the client applies the edit: both files change, the diagnostic goes
    for uri, old, new, v in ((lib, LIB, new_lib, 4), (main, MAIN, new_main, 9)):
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=v),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=new)]))
    assert codes(await wait_version(client, lib, 4)) == []
    assert codes(await wait_version(client, main, 9)) == []


async def test_diagnostics_without_data_or_from_an_old_version_are_fixed_from_a_fresh_check(
        client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "lib.ss")
    open_doc(client, uri, LIB)
    d = (await wait_version(client, uri, 1)).diagnostics[0]
    bare = T.Diagnostic(range=d.range, message=d.message, code=d.code, source=d.source)
    (action,) = await actions(client, uri, bare)
    assert action.title == "Make `m` the first parameter"
    assert action.edit.document_changes[0].text_document.version == 1
    # a blank line above: the old diagnostic's data is out of date
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text="\n" + LIB)]))
    await wait_version(client, uri, 2)
    # the cursor is on the moved line; the client still holds version 1's diagnostic
    cursor = T.Position(d.range.start.line + 1, d.range.start.character + 2)
    (action,) = await actions(client, uri, d, rng=T.Range(cursor, cursor))
    (change,) = action.edit.document_changes
    assert change.text_document.version == 2
    assert apply("\n" + LIB, change.edits).startswith("\n" + LIB[:LIB.index("@")] + "@export(hf)\nfn classify(m: ")


async def test_only_other_kinds_gets_nothing(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "lib.ss")
    open_doc(client, uri, LIB)
    d = (await wait_version(client, uri, 1)).diagnostics[0]
    assert await actions(client, uri, d, only=[T.CodeActionKind.Refactor]) is None
    assert await actions(client, uri, d, only=[T.CodeActionKind.QuickFix])


@pytest_lsp.fixture(config=config(), scope="module")
async def plain_client(lsp_client: LanguageClient):
    await initialize(lsp_client, caps=T.ClientCapabilities())
    yield
    await lsp_client.shutdown_session()


async def test_clients_without_document_changes_get_plain_changes(plain_client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "lib.ss")
    open_doc(plain_client, uri, LIB)
    d = (await wait_version(plain_client, uri, 1)).diagnostics[0]
    (action,) = await actions(plain_client, uri, d)
    assert action.edit.document_changes is None
    assert "fn classify(m: Classifier, x: [b D])" in apply(LIB, action.edit.changes[uri])
    assert position(LIB, LIB.index("x: [b D], m")) == action.edit.changes[uri][0].range.start
