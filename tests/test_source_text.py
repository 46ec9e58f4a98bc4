"""Text a careful user produces: a byte order mark, form feeds, files that are not
UTF-8, bare-CR line ends. The CLI and the server read them alike and agree on positions."""
from __future__ import annotations

import json

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from checkout import shapescript
from lsp_support import config, initialize, open_doc, uri_of, wait_version
from shapescript_core.syntax.source import LineIndex, decode_source
from support import check, errors

FN = "dim D = 4\nfn f(x: [n D]) -> [n D]:\n    y = x\n    return y\n"


def _cli_json(path) -> list:
    r = shapescript("check", "--format", "json", path, timeout=120)
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


# ---------------------------------------------------------------- byte order mark
def test_a_byte_order_mark_starts_a_file_as_in_python():
    assert errors("\ufeff" + FN) == []
    assert errors("\ufeff# the model's dims\n" + FN) == []
    ws, diags = check("\ufeff" + FN.replace("return y", "return z"))
    assert [d.code for d in diags] == ["E0201", "W0101"]
    # text before the first item is still an error, the mark is no part of it
    assert errors("\ufeffxyz\n" + FN) == [("E0101", 1)]


def test_the_cli_reads_past_the_mark_so_columns_are_the_editors(tmp_path):
    p = tmp_path / "bom.ss"
    p.write_bytes(b"\xef\xbb\xbf" + "dim D = Q\n".encode())
    (d,) = _cli_json(p)
    assert d["code"] == "E0201"
    assert (d["range"]["start"]["line"], d["range"]["start"]["column"]) == (1, 9)  # as without the mark


# ---------------------------------------------------------------- form feed
def test_a_form_feed_in_indentation_counts_from_zero_as_in_python():
    assert errors(FN.replace("    return y", "\f    return y")) == []
    assert errors(FN.replace("    y = x", "  \f    y = x")) == []
    assert errors("dim D = 4\n\f\n" + FN[10:]) == []  # a page break between items
    assert errors("dim D = 4\n\ffn f(x: [n D]) -> [n D]:\n    return x\n") == []


# ---------------------------------------------------------------- not UTF-8
def test_an_imported_file_that_is_not_utf8_is_an_error_at_the_import(tmp_path):
    (tmp_path / "lib.ss").write_bytes(b"dim D = 4\n# caf\xe9\nfn g(x: [n D]) -> [n D]:\n    return x\n")
    main = tmp_path / "main.ss"
    main.write_text('dim E = 2\nimport "lib.ss"\nfn f(x: [n D]) -> [n D]:\n    return g(x)\n', encoding="utf-8")
    ws, diags = check(main.read_text(), path=str(main))
    assert [(d.code, d.message) for d in diags] == [
        ("E0210", "can't read `lib.ss`: it isn't UTF-8 (byte 0xe9 at line 2, column 6)")]
    f = ws.file(str(main))
    assert f.lines.line_col(diags[0].span.abs_start) == (1, 7)  # on the import's file name
    (d,) = _cli_json(main)
    assert d["code"] == "E0210" and d["range"]["start"]["line"] == 2


def test_decode_source():
    assert decode_source(b"\xef\xbb\xbfdim D\n") == ("dim D\n", None)
    text, where = decode_source(b"ab\ncd\xffe")
    assert text == "ab\ncd\ufffde" and where == "byte 0xff at line 2, column 3"


# ---------------------------------------------------------------- bare CR
@pytest.mark.parametrize("text, starts, lines", [
    ("a\nbc\n", [0, 2, 5], ["a", "bc", ""]),
    ("a\r\nbc\r\n", [0, 3, 7], ["a", "bc", ""]),
    ("a\rbc\r", [0, 2, 5], ["a", "bc", ""]),
    ("a\r\r\nb", [0, 2, 4], ["a", "", "b"]),
])
def test_line_index_ends_lines_as_lsp_does(text, starts, lines):
    ix = LineIndex(text)
    assert list(ix.starts) == starts
    assert [ix.line_text(i) for i in range(len(starts))] == lines
    assert ix.offset(0, 99) == 1  # a column past the end stops before the line break
    assert ix.line_col(starts[1]) == (1, 0)


CR_TEXT = "dim D = 4\rfn f(x: [n D]) -> [n D]:\r    y = x\r    return q\r"


def test_bare_cr_line_ends_check_as_lines(tmp_path):
    ws, diags = check(CR_TEXT)
    f = ws.file("/tmp/shapescript-test/case.ss")
    assert [(d.code, f.lines.line_col(d.span.abs_start)) for d in diags] == [("E0201", (3, 11)), ("W0101", (2, 4))]
    p = tmp_path / "cr.ss"
    p.write_bytes(CR_TEXT.encode())
    got = sorted((d["code"], d["range"]["start"]["line"], d["range"]["start"]["column"]) for d in _cli_json(p))
    assert got == [("E0201", 4, 12), ("W0101", 3, 5)]  # 1-based: the same places


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_the_server_counts_bare_cr_as_a_line_end(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "cr.ss")
    open_doc(client, uri, CR_TEXT)
    p = await wait_version(client, uri, 1)
    got = sorted((d.code, d.range.start.line, d.range.start.character) for d in p.diagnostics)
    assert got == [("E0201", 3, 11), ("W0101", 2, 4)]  # the CLI's places, 0-based
    # an incremental edit addressed by CR-counted lines: `q` becomes `y`
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangePartial(
            range=T.Range(T.Position(3, 11), T.Position(3, 12)), text="y")]))
    p = await wait_version(client, uri, 2)
    assert list(p.diagnostics) == []
