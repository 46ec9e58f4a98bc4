"""The editor's export takes its defaults from the settings: `shapescript.toml` at the
workspace root (paths relative to it) under the editor's `shapescript` section."""
from __future__ import annotations

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
safe_open = pytest.importorskip("safetensors").safe_open
save_file = pytest.importorskip("safetensors.numpy").save_file

from lsp_support import config, initialize, open_doc, uri_of, wait_version
from test_lsp_export import GOOD as CLASSIFIER, export

SETTINGS = {"export": {"dtype": "bf16"}}  # over the file's f16


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    (tmp_path / "shapescript.toml").write_text(
        '[export]\noutput = "exported"\nweights = "w.safetensors"\ndtype = "f16"\n', encoding="utf-8")
    lsp_client.w = np.random.default_rng(1).standard_normal((10, 64)).astype(np.float32)
    save_file({"w": lsp_client.w}, str(tmp_path / "w.safetensors"))
    lsp_client.root = tmp_path
    lsp_client.set_configuration(SETTINGS, section="shapescript")
    await initialize(lsp_client, root=str(tmp_path), options={"settings": SETTINGS})
    yield
    await lsp_client.shutdown_session()


async def test_defaults_come_from_the_settings(client: LanguageClient):
    uri = uri_of(client.root / "classify.ss")
    open_doc(client, uri, CLASSIFIER)
    await wait_version(client, uri, 1)
    out = client.root / "exported"
    result = await export(client, uri=uri, target="hf")
    assert result["ok"], result["message"]
    assert result["output"] == str(out) and not result["random_weights"]
    assert "random" not in result["message"]
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        (key,) = list(f.keys())
        assert torch.equal(f.get_tensor(key), torch.tensor(client.w).to(torch.bfloat16))
    # again: the output exists
    result = await export(client, uri=uri, target="hf")
    assert result["ok"] is False and f"`{out}` exists: pass --force to replace it" in result["message"]
    result = await export(client, uri=uri, target="hf", force=True, random=True, seed=2)
    assert result["ok"] and "random weights (seed 2)" in result["message"]
