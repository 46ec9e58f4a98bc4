"""Settings: `shapescript.toml` at the root and the editor's `shapescript` section (dim
overrides, default export targets), fetched with workspace/configuration."""
from __future__ import annotations

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import codes, config, initialize, open_doc, uri_of, wait_publishes, wait_version

DIMS = """\
dim D  = 64
dim H  = 16
dim Dh = D / H

fn f(x: [b D]) -> [b D]:
    return x
"""

UNMARKED = """\
dim D = 4

model M:
    w: [D D]

fn forward(m: M, x: [b D]) -> [b D]:
    return linear(x, m.w)
"""


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    (tmp_path / "shapescript.toml").write_text(
        'default_targets = ["vllm"]\n\n[dims]\nD = 60\n\n[export]\ndtype = "f64"\n', encoding="utf-8")
    lsp_client.root = tmp_path
    await initialize(lsp_client, root=str(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def test_the_project_file_overrides_dims_and_the_editor_overrides_the_file(client: LanguageClient):
    uri = uri_of(client.root / "dims.ss")
    open_doc(client, uri, DIMS)
    p = await wait_version(client, uri, 1)
    # D = 60 from shapescript.toml: 60 / 16 doesn't divide
    assert codes(p) == ["E0208"] and "doesn't divide: 60 / 16" in p.diagnostics[0].message
    # a bad entry is reported, not applied
    assert any("`export.dtype` can't be `f64`" in m.message for m in client.messages)
    n = len([q for q in client.publishes if q.uri == uri])
    client.set_configuration({"dims": {"D": 32}}, section="shapescript")
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
    ps = await wait_publishes(client, uri, n + 1)
    assert ps[-1].version == 1 and codes(ps[-1]) == []


async def test_default_targets_apply_to_an_unmarked_forward(client: LanguageClient):
    uri = uri_of(client.root / "model.ss")
    open_doc(client, uri, UNMARKED)
    await wait_version(client, uri, 1)
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
    assert [lens.command.title for lens in lenses] == ["Export ▸ vllm"]
