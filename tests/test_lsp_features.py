"""Hover, inlay hints, navigation, completion, signature help, semantic tokens and code
lenses, end to end through the protocol (one server for the module)."""
from __future__ import annotations

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import at, config, initialize, open_doc, position, replace, uri_of, wait_version
from shapescript_core.diagnostics import doc_url

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIB = """\
# Shared sizes.
dim D  = 64
dim H  = 4
dim Dh = D / H
dim V  = 100

# An attention layer's weights.
model Attn:
    wq: [D D]
    wo: [D D]
"""

MAIN = """\
import "lib.ss"

model Net:
    embed: [V D]
    attn: Attn

fn attend(a: Attn, x: [b n D]) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    att = einsum(q, q: b H n Dh, b H m Dh -> b H n m) |> softmax(over=m)
    o = einsum(att, q: b H n m, b H m Dh -> b H n Dh)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn encode(m: Net, ids: [b n] Index[V]) -> [b n D]:
    x = embedding(ids, m.embed)
    return attend(m.attn, x)
"""


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.init_result = await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("features")
    return str(d / "lib.ss"), str(d / "main.ss")


@pytest_asyncio.fixture(loop_scope="module")
async def docs(client: LanguageClient, files):
    lib, main = files
    if uri_of(main) not in client.diagnostics:
        open_doc(client, uri_of(lib), LIB)
        open_doc(client, uri_of(main), MAIN)
        assert not (await wait_version(client, uri_of(main), 1)).diagnostics
    return uri_of(lib), uri_of(main)


async def hover(client, uri, pos) -> str:
    h = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri), pos))
    assert h is not None, f"no hover at {pos}"
    assert h.contents.kind == T.MarkupKind.Markdown
    return h.contents.value


async def test_hover_shows_types_builtins_dims_models(client: LanguageClient, docs):
    lib, main = docs
    assert "att: [b H n m] f32" in await hover(client, main, at(MAIN, "att =", 1))
    assert "q: [b H n Dh] f32" in await hover(client, main, at(MAIN, "einsum(att, q", 12))
    # an expression: the whole pipeline's type, on its `|>`
    assert "[b n D] f32" in await hover(client, main, at(MAIN, "|> linear(a.wo)", 1))
    text = await hover(client, main, at(MAIN, "softmax", 2))
    assert "softmax(x, over=A)" in text and "shape kept" in text and "here: `[b H n m] f32`" in text
    text = await hover(client, main, at(MAIN, "(H Dh)", 4))
    assert "dim Dh = D / H" in text and "`Dh = 16`" in text and "from `lib.ss`" in text
    text = await hover(client, main, at(MAIN, "m: Net", 4))
    assert "model Net:" in text and "embed: [V D] f32" in text and "attn: Attn" in text
    assert "Net.embed: [V D] f32" in await hover(client, main, at(MAIN, "m.embed", 3))
    assert "fn attend(a: Attn, x: [b n D]) -> [b n D]" in await hover(client, main, at(MAIN, "attend(m", 2))


async def test_hover_on_a_diagnostic_explains_its_code(client: LanguageClient, tmp_path):
    src = MAIN.replace("b H n m, b H m Dh -> b H n Dh", "b H m n, b H m Dh -> b H n Dh")
    uri = uri_of(tmp_path / "main.ss")
    (tmp_path / "lib.ss").write_text(LIB, encoding="utf-8")
    open_doc(client, uri, src)
    p = await wait_version(client, uri, 1)
    assert [d.code for d in p.diagnostics] == ["E0408"]
    text = await hover(client, uri, p.diagnostics[0].range.start)
    assert "**error[E0408]**" in text
    assert "A pattern names an axis that the operand already has" in text
    assert f"({doc_url('E0408')})" in text


async def test_inlay_hints_show_the_shape_after_each_assignment(client: LanguageClient, docs):
    lib, main = docs
    hints = await client.text_document_inlay_hint_async(T.InlayHintParams(
        T.TextDocumentIdentifier(main), T.Range(T.Position(0, 0), T.Position(20, 0))))
    got = {h.position.line: h.label for h in hints}
    assert got == {7: "▸ [b H n Dh]", 8: "▸ [b H n m]", 9: "▸ [b H n Dh]", 13: "▸ [b n D]"}
    att = [h for h in hints if h.position.line == 8][0]
    assert att.position == position(MAIN, MAIN.index("softmax(over=m)") + len("softmax(over=m)"))
    assert att.kind == T.InlayHintKind.Type


async def definition(client, uri, pos):
    res = await client.text_document_definition_async(T.DefinitionParams(T.TextDocumentIdentifier(uri), pos))
    assert res, f"no definition at {pos}"
    return [(r.uri, r.range.start.line, r.range.start.character) for r in res]


async def test_go_to_definition_across_imports(client: LanguageClient, docs):
    lib, main = docs
    assert await definition(client, main, at(MAIN, "(H Dh)", 4)) == [(lib, 3, 4)]  # a dim
    assert await definition(client, main, at(MAIN, "a: Attn", 4)) == [(lib, 7, 6)]  # a model
    assert await definition(client, main, at(MAIN, "a.wq", 3)) == [(lib, 8, 4)]  # a field
    assert await definition(client, main, at(MAIN, "m.attn", 3)) == [(main, 4, 4)]
    assert await definition(client, main, at(MAIN, "attend(m", 1)) == [(main, 6, 3)]  # a function
    assert await definition(client, main, at(MAIN, "einsum(att", 8)) == [(main, 8, 4)]  # a local
    assert await definition(client, main, at(MAIN, "embedding(ids", 11)) == [(main, 12, 18)]  # a parameter
    assert await definition(client, main, at(MAIN, '"lib.ss"', 2)) == [(lib, 0, 0)]  # the import


async def test_document_symbols(client: LanguageClient, docs):
    lib, main = docs
    syms = await client.text_document_document_symbol_async(T.DocumentSymbolParams(T.TextDocumentIdentifier(main)))
    assert [(s.name, s.kind) for s in syms] == [
        ("lib.ss", T.SymbolKind.Module), ("Net", T.SymbolKind.Struct),
        ("attend", T.SymbolKind.Function), ("encode", T.SymbolKind.Function)]
    assert [(c.name, c.kind, c.detail) for c in syms[1].children] == [
        ("embed", T.SymbolKind.Field, "[V D]"), ("attn", T.SymbolKind.Field, "Attn")]
    assert syms[2].detail == "(a: Attn, x: [b n D]) -> [b n D]"
    assert syms[2].selection_range.start == T.Position(6, 3)


async def complete(client, uri, pos) -> dict:
    res = await client.text_document_completion_async(T.CompletionParams(T.TextDocumentIdentifier(uri), pos))
    return {c.label: c for c in res.items}


async def test_completion(client: LanguageClient, tmp_path):
    (tmp_path / "lib.ss").write_text(LIB, encoding="utf-8")
    uri = uri_of(tmp_path / "main.ss")
    # typing `y = m.` on a new line of `encode`: the function doesn't parse, fields still come
    i = MAIN.index("    return attend")
    text = MAIN[:i] + "    y = m.\n" + MAIN[i:]
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    items = await complete(client, uri, position(text, i + len("    y = m.")))
    assert set(items) == {"embed", "attn"}
    assert items["embed"].kind == T.CompletionItemKind.Field and items["embed"].detail == "[V D] f32"
    # a field of a field, read through an imported model
    text = replace(client, uri, 2, text, i + 10, i + 10, "attn.")
    items = await complete(client, uri, position(text, i + len("    y = m.attn.")))
    assert set(items) == {"wq", "wo"}
    # a name: locals, parameters, dims, builtins, functions
    text = replace(client, uri, 3, text, i + 8, i + 15, "e")
    items = await complete(client, uri, position(text, i + len("    y = e")))
    assert {"embedding", "einsum", "encode", "exp"} <= set(items)
    assert items["embedding"].kind == T.CompletionItemKind.Function
    text = replace(client, uri, 4, text, i + 8, i + 9, "")
    items = await complete(client, uri, position(text, i + len("    y = ")))
    assert {"x", "ids", "m", "D", "Dh", "linear", "attend"} <= set(items)
    assert items["x"].detail == "[b n D] f32"
    assert items["Dh"].detail == "dim Dh = 16"


async def test_signature_help_for_builtins(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "sig.ss")
    text = "dim D = 4\n\nfn f(x: [b D], w: [D D]) -> [b D]:\n    return rms_norm(x, w, \n"
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    sh = await client.text_document_signature_help_async(T.SignatureHelpParams(
        T.TextDocumentIdentifier(uri), position(text, len(text) - 1)))
    sig = sh.signatures[0]
    assert sig.label == "rms_norm(x, w, over=A, eps=1e-06)"
    assert sh.active_parameter == 2
    a, b = sig.parameters[2].label
    assert sig.label[a:b] == "over=A"
    # piped: the value before `|>` is the first argument
    text2 = text.replace("rms_norm(x, w, ", "x |> rms_norm(w, ov")
    replace(client, uri, 2, text, 0, len(text), text2)
    sh = await client.text_document_signature_help_async(T.SignatureHelpParams(
        T.TextDocumentIdentifier(uri), position(text2, len(text2) - 1)))
    assert sh.active_parameter == 2


async def test_semantic_tokens(client: LanguageClient, docs):
    lib, main = docs
    toks = await client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(T.TextDocumentIdentifier(main)))
    types = client.init_result.capabilities.semantic_tokens_provider.legend.token_types
    data = list(toks.data)
    decoded, line, col = [], 0, 0
    for k in range(0, len(data), 5):
        dl, dc, n, typ, _ = data[k:k + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        decoded.append((MAIN.splitlines()[line][col:col + n], typ))
    kinds = {}
    for word, typ in decoded:
        kinds.setdefault(word, set()).add(types[typ])
    assert kinds["fn"] == {"keyword"}
    assert kinds["linear"] == {"function"}
    assert kinds["attend"] == {"function"}
    assert kinds["Net"] == {"type"}
    assert kinds["Dh"] == {"variable"}  # a dim (readonly)
    assert kinds["b"] == {"typeParameter"}
    assert "property" in kinds["wq"]
    assert kinds['"lib.ss"'] == {"string"}


async def test_code_lens_over_exportable_functions(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "lm.ss")
    text = ("dim V = 10\ndim D = 4\n\nmodel M:\n    e: [V D]\n\n"
            "fn forward(m: M, ids: [b n] Index[V]) -> [b n V]:\n    return embedding(ids, m.e) @ m.e\n")
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
    assert [lens.command.title for lens in lenses] == ["Export ▸ hf", "vllm", "gguf", "litert"]
    assert all(lens.range.start == T.Position(6, 3) for lens in lenses)
    assert lenses[1].command.command == "shapescript.export"
    assert list(lenses[1].command.arguments) == [{"uri": uri, "fn": "forward", "target": "vllm"}]
