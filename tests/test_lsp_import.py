"""The editor's export imports a checkpoint named in the settings (`shapescript.toml`
`[export] weights`) with the same importer and the same one diagnostic as the CLI."""
from __future__ import annotations

import json
import os

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from import_support import EXAMPLES, SOURCES, hf_model, load_export, logits, max_diff, save_checkpoint
from lsp_support import config, initialize, open_doc, uri_of, wait_version
from test_lsp_export import export

DIMS = SOURCES["qwen3"][2]


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    dims = "\n".join(f"{k} = {v}" for k, v in DIMS.items())
    (tmp_path / "shapescript.toml").write_text(f'[export]\nweights = "ckpt"\n\n[dims]\n{dims}\n', encoding="utf-8")
    lsp_client.model = hf_model("qwen3")
    save_checkpoint(lsp_client.model, str(tmp_path / "ckpt"))
    lsp_client.root = tmp_path
    await initialize(lsp_client, root=str(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def test_the_settings_checkpoint_is_imported_by_role(client: LanguageClient):
    src = client.root / "qwen3.ss"
    text = open(os.path.join(EXAMPLES, "qwen3.ss"), encoding="utf-8").read()
    src.write_text(text)
    uri = uri_of(src)
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    out = client.root / "out"
    result = await export(client, uri=uri, target="hf", output=str(out))
    assert result["ok"], result["message"]
    assert not result["random_weights"]
    assert max_diff(logits(load_export(str(out))), logits(client.model)) < 1e-4
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["max_position_embeddings"] == 256


async def test_a_checkpoint_that_does_not_fit_is_one_e3314(client: LanguageClient):
    src = client.root / "llama.ss"
    text = open(os.path.join(EXAMPLES, "llama.ss"), encoding="utf-8").read()
    src.write_text(text)
    uri = uri_of(src)
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    out = client.root / "out2"
    result = await export(client, uri=uri, target="hf", output=str(out))
    assert result["ok"] is False and not out.exists()
    assert [d["code"] for d in result["diagnostics"]] == ["E3314"]
    assert "the checkpoint is a `qwen3` model, but the source is a llama model" in result["message"] + \
        json.dumps(result["diagnostics"])
