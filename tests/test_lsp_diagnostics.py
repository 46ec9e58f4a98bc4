"""Diagnostics as the user types, end to end: versioned publishes, incremental edits,
importers, stale versions, close, pull diagnostics."""
from __future__ import annotations

import os

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import (ROOT, as_json, capabilities, codes, config, fresh, initialize, open_doc, replace,
                         uri_of, wait_publishes, wait_until, wait_version)

BROKEN = open(os.path.join(ROOT, "examples", "broken_attention.ss"), encoding="utf-8").read()

LIB = """\
dim D = 64
dim C = 10

model Classifier:
    w: [C D]

fn head(m: Classifier, x: [b D]) -> [b C]:
    return linear(x, m.w)
"""

MAIN = """\
import "lib.ss"

fn classify(m: Classifier, x: [b D]) -> [b C]:
    return head(m, x)
"""


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_open_publishes_the_version_and_full_diagnostics(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "attn.ss")
    open_doc(client, uri, BROKEN, version=7)
    p = await wait_version(client, uri, 7)
    assert codes(p) == ["E0408"]
    d = p.diagnostics[0]
    assert d.severity == T.DiagnosticSeverity.Error
    assert d.source == "shapescript"
    assert d.message.startswith("the pattern calls axis 3 `m`, but `m` is axis 4")
    assert d.code_description.href.endswith("/errors/E0408.md")
    assert d.range.start.line == 13
    assert [r.message for r in d.related_information] == ["`att` is [b H n m]"]
    assert as_json(p.diagnostics) == fresh({str(tmp_path / "attn.ss"): BROKEN}, str(tmp_path / "attn.ss"),
                                           {str(tmp_path / "attn.ss"): 7})


async def test_incremental_edits_republish_each_version(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "attn.ss")
    open_doc(client, uri, BROKEN)
    await wait_version(client, uri, 1)
    # swap `m n` back to `n m` in the second einsum: the error goes
    i = BROKEN.index("b H m n")
    text = replace(client, uri, 2, BROKEN, i + 4, i + 7, "n m")
    assert codes(await wait_version(client, uri, 2)) == []
    # and comes back when undone
    replace(client, uri, 3, text, i + 4, i + 7, "m n")
    assert codes(await wait_version(client, uri, 3)) == ["E0408"]


async def test_serving_engine_codes_link_their_page_and_carry_fixes(client: LanguageClient, tmp_path):
    src = LIB.replace("fn head(m: Classifier, x: [b D])", "@export(hf)\nfn head(x: [b D], m: Classifier)") \
        .replace("linear(x, m.w)", "linear(x, m.w)")
    uri = uri_of(tmp_path / "lib.ss")
    open_doc(client, uri, src)
    p = await wait_version(client, uri, 1)
    (d,) = [d for d in p.diagnostics if d.code == "E3306"]
    assert d.code_description.href.endswith("serving-engines.md#e3306")
    fixes = d.data["fixes"]
    assert fixes[0]["title"] == "Make `m` the first parameter"
    assert fixes[0]["versions"] == {uri: 1}


async def test_files_that_import_an_edited_file_are_republished(client: LanguageClient, tmp_path):
    lib, main = uri_of(tmp_path / "lib.ss"), uri_of(tmp_path / "main.ss")
    open_doc(client, lib, LIB)
    open_doc(client, main, MAIN, version=5)
    await wait_version(client, lib, 1)
    assert codes(await wait_version(client, main, 5)) == []
    n = len([p for p in client.publishes if p.uri == main])
    # rename `head` in lib.ss: main.ss, unchanged at version 5, gets an error
    i = LIB.index("head")
    text = replace(client, lib, 2, LIB, i, i + 4, "hd")
    await wait_version(client, lib, 2)
    again = (await wait_publishes(client, main, n + 1))[-1]
    assert again.version == 5
    assert codes(again) == ["E0205"]
    assert "`head` isn't a function" in again.diagnostics[0].message
    # rename it back: the error goes
    replace(client, lib, 3, text, i, i + 2, "head")
    await wait_version(client, lib, 3)
    await wait_until(client, lambda: not codes([p for p in client.publishes if p.uri == main][-1]))


async def test_a_burst_of_edits_publishes_in_order_and_ends_with_the_last_version(client: LanguageClient, tmp_path):
    path = tmp_path / "burst.ss"
    uri = uri_of(path)
    text = BROKEN
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    i = text.index("softmax(over=m)")
    versions = list(range(2, 42))
    for v in versions:  # no waiting: the server sees the client move on
        text = replace(client, uri, v, text, i + 13, i + 14, "n" if v % 2 else "m")
    last = await wait_version(client, uri, versions[-1])
    seen = [p.version for p in client.publishes if p.uri == uri]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)  # never a version after a newer one
    assert seen[-1] == versions[-1]
    assert as_json(last.diagnostics) == fresh({str(path): text}, str(path), {str(path): versions[-1]})


async def test_close_clears_the_diagnostics(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "attn.ss")
    open_doc(client, uri, BROKEN)
    await wait_version(client, uri, 1)
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))
    await wait_until(client, lambda: not client.diagnostics.get(uri))
    assert client.publishes[-1].uri == uri and not client.publishes[-1].diagnostics


@pytest_lsp.fixture(config=config(), scope="module")
async def pull_client(lsp_client: LanguageClient):
    await initialize(lsp_client, caps=capabilities(pull=True))
    yield
    await lsp_client.shutdown_session()


async def test_pull_diagnostics_and_refresh_for_importers(pull_client: LanguageClient, tmp_path):
    client = pull_client
    assert client.capabilities is not None
    lib, main = uri_of(tmp_path / "lib.ss"), uri_of(tmp_path / "main.ss")
    open_doc(client, lib, LIB)
    open_doc(client, main, MAIN)
    report = await client.text_document_diagnostic_async(T.DocumentDiagnosticParams(T.TextDocumentIdentifier(main)))
    assert report.kind == "full" and not report.items
    again = await client.text_document_diagnostic_async(T.DocumentDiagnosticParams(
        T.TextDocumentIdentifier(main), previous_result_id=report.result_id))
    assert again.kind == "unchanged"
    i = LIB.index("head")
    replace(client, lib, 2, LIB, i, i + 4, "hd")
    report = await client.text_document_diagnostic_async(T.DocumentDiagnosticParams(
        T.TextDocumentIdentifier(main), previous_result_id=report.result_id))
    assert report.kind == "full" and [d.code for d in report.items] == ["E0205"]
    assert client.diagnostic_refresh_count >= 1  # main.ss imports lib.ss: the client is told to pull again
    assert not [p for p in client.publishes]  # a pulling client gets no pushes


@pytest_lsp.fixture(config=config(), scope="module")
async def push_anyway(lsp_client: LanguageClient):
    result = await initialize(lsp_client, caps=capabilities(pull=True), options={"diagnosticMode": "push"})
    lsp_client.init_result = result
    yield
    await lsp_client.shutdown_session()


async def test_diagnostic_mode_can_force_pushes(push_anyway: LanguageClient, tmp_path):
    assert push_anyway.init_result.capabilities.diagnostic_provider is None
    uri = uri_of(tmp_path / "attn.ss")
    open_doc(push_anyway, uri, BROKEN)
    assert codes(await wait_version(push_anyway, uri, 1)) == ["E0408"]


async def test_large_files_opened_together_show_their_syntax_errors_then_everything(client: LanguageClient, tmp_path):
    """A file of 200 items or more, opened cold, has the syntax errors of its first lines
    published at didOpen (first_publish.py), the whole file's as soon as it is parsed,
    and its check goes behind the documents opened with it; then the same version's
    complete diagnostics, as `check` gives them."""
    padding = "".join(f"dim Pad{i} = {i + 1}\n" for i in range(220))
    broken = "\nfn oops(x: [n D]) -> [n D]:\n    return (x\n"
    texts = {tmp_path / "a.ss": padding + BROKEN + broken, tmp_path / "b.ss": BROKEN + broken + padding}
    top = {tmp_path / "a.ss": [], tmp_path / "b.ss": ["E0104"]}  # b's syntax error is in its first lines
    for path, text in texts.items():
        open_doc(client, uri_of(path), text, version=3)
    for path, text in texts.items():
        uri = uri_of(path)
        first, syntax, *_, last = await wait_publishes(client, uri, 3, timeout=60)
        assert first.version == syntax.version == last.version == 3
        assert codes(first) == top[path]
        assert codes(syntax) == ["E0104"]  # the syntax error only: nothing checked yet
        assert sorted(codes(last)) == ["E0104", "E0408"]
        assert as_json(last.diagnostics) == fresh({str(p): t for p, t in texts.items()}, str(path),
                                                  {str(p): 3 for p in texts})
