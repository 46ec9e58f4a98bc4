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


UGLY = """\
dim D=64
fn f(x:[b n D])->[b n D]:
  return x|>softmax(over=D)
fn g(x:[b n D])->[b n D]:
  return x
"""


async def test_formatting_and_range_formatting(client: LanguageClient):
    uri = uri_of(os.path.join(client.root, "ugly.ss"))
    open_doc(client, uri, UGLY)
    await wait_version(client, uri, 1)
    edits = await client.text_document_formatting_async(T.DocumentFormattingParams(
        T.TextDocumentIdentifier(uri), T.FormattingOptions(tab_size=2, insert_spaces=True)))
    assert _apply(UGLY, edits) == ("dim D = 64\n\nfn f(x: [b n D]) -> [b n D]:\n    return x |> softmax(over=D)\n\n"
                                   "fn g(x: [b n D]) -> [b n D]:\n    return x\n")
    start = at(UGLY, "fn g")
    edits = await client.text_document_range_formatting_async(T.DocumentRangeFormattingParams(
        T.TextDocumentIdentifier(uri), T.Range(start, T.Position(start.line, 3)),
        T.FormattingOptions(tab_size=4, insert_spaces=True)))
    assert _apply(UGLY, edits) == UGLY.replace("fn g(x:[b n D])->[b n D]:\n  return x",
                                               "\nfn g(x: [b n D]) -> [b n D]:\n    return x")


def _apply(text: str, edits) -> str:
    from shapescript_core.syntax.source import LineIndex
    lines = LineIndex(text)
    spans = [(lines.offset_utf16(e.range.start.line, e.range.start.character),
              lines.offset_utf16(e.range.end.line, e.range.end.character), e.new_text) for e in edits]
    for s, e, new in sorted(spans, reverse=True):
        text = text[:s] + new + text[e:]
    return text


async def test_folding_and_selection_ranges(client: LanguageClient, main):
    folds = await client.text_document_folding_range_async(T.FoldingRangeParams(T.TextDocumentIdentifier(main)))
    assert [(f.start_line, f.end_line) for f in folds] == [(2, 4), (6, 10), (8, 9)]
    (sel,) = await client.text_document_selection_range_async(T.SelectionRangeParams(
        T.TextDocumentIdentifier(main), [at(MAIN, "helper(layer, y)", 8)]))
    chain = []
    while sel is not None:
        chain.append((sel.range.start.line, sel.range.start.character, sel.range.end.line, sel.range.end.character))
        sel = sel.parent
    assert chain[:3] == [(9, 19, 9, 24), (9, 12, 9, 28), (9, 8, 9, 28)]
    assert chain[-1][:2] == (0, 0)


async def test_workspace_symbols_include_files_not_open(client: LanguageClient, main):
    syms = await client.workspace_symbol_async(T.WorkspaceSymbolParams(query="twi"))
    assert [(s.name, s.location.uri.rsplit("/", 2)[-2:]) for s in syms] == [("twice", ["sub", "user.ss"])]


async def test_call_hierarchy(client: LanguageClient, main):
    (item,) = await client.text_document_prepare_call_hierarchy_async(T.CallHierarchyPrepareParams(
        *_doc(main, at(MAIN, "helper(m.attn", 1))))
    assert item.name == "helper" and item.uri.endswith("/lib.ss")
    incoming = await client.call_hierarchy_incoming_calls_async(T.CallHierarchyIncomingCallsParams(item))
    got = sorted((c.from_.name, len(c.from_ranges)) for c in incoming)
    assert got == [("encode", 2), ("twice", 2)]
    outgoing = await client.call_hierarchy_outgoing_calls_async(T.CallHierarchyOutgoingCallsParams(incoming[0].from_))
    assert [c.to.name for c in outgoing] == ["helper"]


async def test_semantic_tokens_full_delta_and_range(client: LanguageClient):
    caps = client.init_result.capabilities.semantic_tokens_provider
    assert caps.range is True and caps.full.delta is True
    uri = uri_of(os.path.join(client.root, "tokens.ss"))
    text = "dim D = 4\n\nfn f(x: [D]) -> [D]:\n    return x\n\nfn g(y: [D]) -> [D]:\n    return y\n"
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    first = await client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(T.TextDocumentIdentifier(uri)))
    assert first.result_id
    new = text.replace("return y", "return f(y)")
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=new)]))
    delta = await client.text_document_semantic_tokens_full_delta_async(T.SemanticTokensDeltaParams(
        T.TextDocumentIdentifier(uri), previous_result_id=first.result_id))
    full = await client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(T.TextDocumentIdentifier(uri)))
    data = list(first.data)
    for e in delta.edits:
        data[e.start:e.start + e.delete_count] = e.data or []
    assert data == list(full.data) and len(delta.edits) == 1 and delta.edits[0].start > 0
    ranged = await client.text_document_semantic_tokens_range_async(T.SemanticTokensRangeParams(
        T.TextDocumentIdentifier(uri), T.Range(T.Position(0, 0), T.Position(0, 9))))
    assert list(ranged.data) == list(full.data)[:15]  # `dim`, `D` and `4`: the first item only
    # a stale base gets the full tokens
    stale = await client.text_document_semantic_tokens_full_delta_async(T.SemanticTokensDeltaParams(
        T.TextDocumentIdentifier(uri), previous_result_id="nope"))
    assert list(stale.data) == list(full.data)


async def test_a_large_file_shows_its_syntax_errors_before_the_check(client: LanguageClient):
    """200 items or more, opened cold: the syntax errors of its first lines at didOpen
    (none: they come later), then a publish with all its syntax errors only, then the
    complete diagnostics of the same version."""
    text = "".join(f"dim D{k} = {k + 1}\n" for k in range(210))
    text += "\nfn broken(x: [D1]) -> [D1]:\n    return x +\n\nfn wrong(x: [D1]) -> [D1]:\n    return nowhere\n"
    uri = uri_of(os.path.join(client.root, "large.ss"))
    open_doc(client, uri, text)
    await wait_until_codes(client, uri, 3)
    mine = [p for p in client.publishes if p.uri == uri]
    assert [sorted(str(d.code) for d in p.diagnostics) for p in mine] == [[], ["E0101"], ["E0101", "E0201"]]
    assert [p.version for p in mine] == [1, 1, 1]


async def wait_until_codes(client, uri, count):
    from lsp_support import wait_until
    return await wait_until(client, lambda: len([p for p in client.publishes if p.uri == uri]) >= count)
