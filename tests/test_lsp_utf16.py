"""Positions are UTF-16 code units, as LSP requires: non-ASCII comments, strings and
identifiers, astral characters (two units) included."""
from __future__ import annotations

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import config, initialize, open_doc, uri_of, wait_version

TEXT = """\
# Attention — 注意力 😀😀 (𝔸𝔹)
dim D = 64  # 😀 size
dim Dh = 16

fn f(x: [b n Dh], pos: [b n] i64, y: [b n Dh]) -> [b n Dh]:
    q = rope(x, pos, style="😀𝔸") + y  # ünïcödé 😀
    return q

fn g(x: [b D]) -> [b D]:
    𝔸 = x
    return x
"""


def u16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    lsp_client.init_result = await initialize(lsp_client, caps=T.ClientCapabilities(general=T.GeneralClientCapabilities(
        position_encodings=[T.PositionEncodingKind.Utf8, T.PositionEncodingKind.Utf16])))
    yield
    await lsp_client.shutdown_session()


async def test_ranges_and_positions_count_utf16_units(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "ü.ss")
    open_doc(client, uri, TEXT)
    p = await wait_version(client, uri, 1)
    by_code = {d.code: d for d in p.diagnostics}
    line5 = TEXT.splitlines()[5]
    s = line5.index('"😀𝔸"')
    assert by_code["E0304"].range == T.Range(T.Position(5, u16(line5[:s])), T.Position(5, u16(line5[:s + 4])))
    assert by_code["E0304"].range.end.character - by_code["E0304"].range.start.character == 6
    assert by_code["E0101"].range == T.Range(T.Position(9, 4), T.Position(9, 6))  # 𝔸: two units
    # hover on the `y` after the astral string, at its UTF-16 column
    col = u16(line5[:line5.index(") + y") + 4])
    h = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri), T.Position(5, col)))
    assert "y: [b n Dh] f32" in h.contents.value
    assert h.range == T.Range(T.Position(5, col), T.Position(5, col + 1))
    # an incremental edit addressed in UTF-16: `y` becomes `zz`
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangePartial(
            range=T.Range(T.Position(5, col), T.Position(5, col + 1)), text="zz")]))
    p = await wait_version(client, uri, 2)
    (undefined,) = [d for d in p.diagnostics if d.code == "E0201"]
    assert "`zz` isn't defined" in undefined.message
    assert undefined.range == T.Range(T.Position(5, col), T.Position(5, col + 2))


async def test_the_server_says_utf16_even_when_offered_utf8_first(client: LanguageClient):
    assert client.capabilities.general.position_encodings[0] == T.PositionEncodingKind.Utf8
    assert client.init_result.capabilities.position_encoding == T.PositionEncodingKind.Utf16
