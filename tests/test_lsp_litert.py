"""`--litert` through the language server: `workspace/executeCommand` `shapescript.export`
with `target: "litert"` runs the real LiteRT-Torch conversion (the LiteRT environment,
tests/envs.py) and leaves a directory whose `.tflite` LiteRT's interpreter runs with
transformers' numbers, and whose `.litertlm` bundles the tokenizer; its progress comes as
work-done reports. `split_cache` reaches the writer (E3318 comes back as a diagnostic). A
server whose LiteRT environment is missing answers with the one line that says how to
install it, writes nothing, and goes on. One conversion serves every assert on it."""
from __future__ import annotations

import json
import os

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient

from envs import require_litert, run_in_env
from litert_support import CACHE, DECODE, EXAMPLES, GPT2_DIMS, INTERPRETER_PARITY, LLAMA_DIMS, PREFILL, PROMPTS
from lsp_support import ROOT, SERVER, config, initialize, make_client, open_doc, uri_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

LLAMA = open(os.path.join(EXAMPLES, "llama.ss"), encoding="utf-8").read()
GPT2 = open(os.path.join(EXAMPLES, "gpt2.ss"), encoding="utf-8").read()
TOLERANCE = 1e-4  # of the largest logit, as tests/test_litert_export.py


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def _export(client, token=None, **args):
    if token is not None:
        client.progress_reports.setdefault(token, [])
    return await client.workspace_execute_command_async(T.ExecuteCommandParams(
        command="shapescript.export", arguments=[args], work_done_token=token))


async def _open(client, path, text):
    uri = uri_of(path)
    open_doc(client, uri, text)
    await wait_version(client, uri, 1)
    return uri


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    pytest.importorskip("tokenizers")
    from test_gguf_tokenizer import train
    d = str(tmp_path_factory.mktemp("lsp_litert_tok") / "tokenizer")
    train(d)
    return d


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def llama(client: LanguageClient, tmp_path_factory, tokenizer_dir):
    """The llama exported once through the server: (result, output folder, progress reports)."""
    require_litert()
    folder = tmp_path_factory.mktemp("lsp_litert")
    uri = await _open(client, folder / "llama.ss", LLAMA)
    out = folder / "llama-litert"
    result = await _export(client, token="litert-export", uri=uri, target="litert", dims=LLAMA_DIMS, random=True,
                           seed=3, output=str(out), tokenizer=tokenizer_dir, prefill_length=PREFILL,
                           cache_length=CACHE)
    return result, out, client.progress_reports["litert-export"]


async def test_the_editor_export_writes_the_litert_directory(llama):
    result, out, _ = llama
    assert result["ok"] is True, result["message"]
    assert result["target"] == "litert" and result["output"] == str(out)
    assert result["message"].startswith(f"wrote {out} (litert: model.tflite ")
    assert f"float32, prefill {PREFILL}, cache {CACHE}; model.litertlm " in result["message"]
    for f in ("model.tflite", "model.litertlm", "README.md", "shapescript_litert_llama.py", "hf/config.json",
              "hf/model.safetensors", "hf/tokenizer.json", "hf/generation_config.json"):
        assert (out / f).is_file(), f
    config = json.loads((out / "hf" / "config.json").read_text())
    assert config["model_type"] == "shapescript_llama" and config["eos_token_id"] == 0
    assert "--extension_modules=shapescript_litert_llama" in (out / "README.md").read_text()
    assert not [n for n in os.listdir(out.parent) if ".shapescript-tmp-" in n]


async def test_its_progress_names_the_conversion(llama):
    _, out, reports = llama
    assert reports[0].kind == "begin" and reports[-1].kind == "end" and str(out) in reports[-1].message
    messages = [r.message or "" for r in reports if r.kind == "report"]
    assert "converting with LiteRT-Torch's export_hf" in messages
    assert any(m.startswith("LiteRT: converting the model") for m in messages), messages
    percents = [r.percentage for r in reports if r.kind == "report" and r.percentage is not None]
    assert percents == sorted(percents)


async def test_its_tflite_runs_as_transformers_on_its_hf_export(llama):
    _, out, _ = llama
    got = run_in_env(require_litert(), INTERPRETER_PARITY, str(out), json.dumps(PROMPTS), json.dumps(DECODE),
                     timeout=600).result
    assert sorted(got["signatures"]) == sorted([f"prefill_{PREFILL}", "decode"])
    assert (got["prefill"], got["cache"]) == (PREFILL, CACHE)
    assert len(got["steps"]) == 2 * (len(DECODE) - 1) + 1
    for s in got["steps"]:
        assert s["max_diff"] <= TOLERANCE * s["max_logit"], s
        assert s["argmax"][0] == s["argmax"][1], s


async def test_split_cache_reaches_the_writer(client: LanguageClient, tmp_path):
    require_litert()
    uri = await _open(client, tmp_path / "gpt2.ss", GPT2)
    result = await _export(client, uri=uri, target="litert", dims=GPT2_DIMS, random=True, split_cache=True,
                           output=str(tmp_path / "out"))
    assert result["ok"] is False
    assert [d["code"] for d in result["diagnostics"]] == ["E3318"]
    assert "--split-cache needs `forward`'s rotary positions as one table" in result["message"]
    assert not (tmp_path / "out").exists()
    result = await _export(client, uri=uri, target="hf", split_cache=True, output=str(tmp_path / "out"))
    assert result["ok"] is False and "--split-cache is for --litert only" in result["message"]
    with pytest.raises(JsonRpcInvalidParams):
        await _export(client, uri=uri, target="litert", split_cache="yes")


NO_LITERT = ClientServerConfig(server_command=SERVER, client_factory=make_client,
                               server_env={**os.environ, "PYTHONPATH": ROOT,
                                           "SHAPESCRIPT_LITERT_PYTHON": "/nonexistent/shapescript/python"})


@pytest_lsp.fixture(config=NO_LITERT, scope="module")
async def bare(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_without_the_environment_one_message_says_how_to_install_it(bare: LanguageClient, tmp_path):
    from shapescript_core.export.litert.env import INSTALL
    uri = await _open(bare, tmp_path / "llama.ss", LLAMA)
    result = await _export(bare, uri=uri, target="litert", dims=LLAMA_DIMS, random=True, output=str(tmp_path / "out"))
    assert result["ok"] is False and result["diagnostics"] == []
    assert result["message"] == INSTALL
    assert INSTALL in bare.messages[-1].message and "Traceback" not in bare.messages[-1].message
    assert os.listdir(tmp_path) == []  # the source is open only, nothing on disk
    # the server goes on: another target still exports
    result = await _export(bare, uri=uri, target="hf", dims=LLAMA_DIMS, random=True, output=str(tmp_path / "hf"))
    assert result["ok"] is True, result["message"]
