"""`workspace/executeCommand` `shapescript.export`: the CLI's backend, work-done progress,
a closing message; bad arguments answered with an error."""
from __future__ import annotations

import asyncio
import json
import os

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from lsp_support import ROOT, config, initialize, open_doc, uri_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

GOOD = """\
dim D = 64
dim C = 10

model Classifier:
    w: [C D]

@export(hf)
fn classify(m: Classifier, x: [b D]) -> [b C]:
    return linear(x, m.w)
"""

BAD = GOOD.replace("fn classify(m: Classifier, x: [b D])", "fn classify(x: [b D], m: Classifier)")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.init_result = await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def export(client, **args):
    return await client.workspace_execute_command_async(T.ExecuteCommandParams(
        command="shapescript.export", arguments=[args]))


async def test_the_command_is_advertised(client: LanguageClient):
    assert list(client.init_result.capabilities.execute_command_provider.commands) == ["shapescript.export"]


async def test_export_runs_the_checks_and_reports_progress(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "good.ss")
    open_doc(client, uri, GOOD)
    await wait_version(client, uri, 1)
    before = set(client.progress_reports)
    result = await export(client, uri=uri, fn="classify", target="hf", output=str(tmp_path / "out"), random=True)
    assert result["fn"] == "classify" and result["target"] == "hf"
    assert result["diagnostics"] == []
    out = tmp_path / "out"
    assert result["ok"] is True and result["output"] == str(out) and result["random_weights"] is True
    assert result["message"] == f"wrote {out} (hf: 1 tensors, 2.7 KB); random weights (seed 0)"
    assert json.loads((out / "config.json").read_text())["architectures"] == ["ShapeScriptClassifierModel"]
    assert (out / "model.safetensors").stat().st_size > 10 * 64 * 4  # the f32 [C D] weight
    (token,) = set(client.progress_reports) - before
    kinds = [r.kind for r in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert client.messages[-1].message.startswith("shapescript: ")
    assert result["message"] in client.messages[-1].message


async def test_export_names_the_diagnostics_that_stop_it(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "bad.ss")
    open_doc(client, uri, BAD)
    await wait_version(client, uri, 1)
    token = "client-token"
    client.progress_reports.setdefault(token, [])  # a token the client made: pytest-lsp must know it
    result = await client.workspace_execute_command_async(T.ExecuteCommandParams(
        command="shapescript.export", arguments=[{"uri": uri, "target": "vllm",
                                                 "position": {"line": 8, "character": 4}}],
        work_done_token=token))
    assert result["ok"] is False and result["fn"] == "classify"
    assert result["message"].startswith("not exported: 1 error stops the vllm export")
    assert "bad.ss:8:12: E3306 `classify` must take the model first" in result["message"]
    assert [d["code"] for d in result["diagnostics"]] == ["E3306"]
    assert client.messages[-1].type == T.MessageType.Warning
    assert [r.kind for r in client.progress_reports[token]][-1] == "end"


async def test_bad_arguments_get_an_error_answer(client: LanguageClient, tmp_path):
    with pytest.raises(JsonRpcInvalidParams):
        await export(client, uri=uri_of(tmp_path / "x.ss"), target="onnx")
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(T.ExecuteCommandParams(command="shapescript.export",
                                                                            arguments=["nope"]))
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(T.ExecuteCommandParams(command="shapescript.nothing"))
    # and the server goes on
    result = await export(client, uri=uri_of(tmp_path / "missing.ss"), target="hf")
    assert result["ok"] is False and "can't read" in result["message"]


LLAMA = open(os.path.join(ROOT, "examples", "llama.ss"), encoding="utf-8").read()  # conformance/ok/llama.ss
TINY = {"V": 256, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}
LONG = {"V": 4096, "D": 512, "H": 8, "Hkv": 4, "F": 1024, "L": 12}  # ~120 MB: a cancel lands mid-write


def _leftovers(folder) -> list:
    return [n for n in os.listdir(folder) if ".shapescript-tmp-" in n]


async def _export_llama(client, tmp_path, name: str, dims: dict, token: str):
    """Open a llama as NAME.ss and send its hf export with a client token; (the request's
    future, the output folder)."""
    uri = uri_of(tmp_path / f"{name}.ss")
    open_doc(client, uri, LLAMA)
    await wait_version(client, uri, 1)
    client.progress_reports.setdefault(token, [])
    out = tmp_path / f"{name}-hf"
    sent = client.workspace_execute_command_async(T.ExecuteCommandParams(
        command="shapescript.export", arguments=[{"uri": uri, "target": "hf", "dims": dims, "output": str(out)}],
        work_done_token=token))
    return asyncio.ensure_future(sent), out, uri


async def test_export_writes_with_progress_moving_per_tensor(client: LanguageClient, tmp_path):
    token = "export-progress"
    sent, out, _ = await _export_llama(client, tmp_path, "llama", TINY, token)
    result = await sent
    assert result["ok"], result["message"]
    assert result["output"] == str(out) and str(out) in result["message"]
    assert result["random_weights"] and "random weights (seed 0)" in result["message"]
    assert "no weights were named" in result["message"]
    reports = client.progress_reports[token]
    assert reports[0].kind == "begin" and reports[0].cancellable and reports[-1].kind == "end"
    assert str(out) in reports[-1].message
    writing = [r for r in reports if r.kind == "report" and (r.message or "").startswith("writing")]
    assert len(writing) >= 21  # one per tensor
    percents = [r.percentage for r in reports if r.kind == "report"]
    assert percents == sorted(percents) and percents[-1] > 90 and len(set(percents)) > 10
    assert "model.safetensors" in os.listdir(out) and _leftovers(tmp_path) == []
    with open(out / "shapescript-weights.json") as fh:
        assert "layers.1.attn.wq" in fh.read()


async def test_a_cancel_leaves_nothing_written(client: LanguageClient, tmp_path):
    token = "export-cancel"
    task, out, uri = await _export_llama(client, tmp_path, "big", LONG, token)
    deadline = asyncio.get_running_loop().time() + 60
    while not any((r.message or "").startswith("writing") for r in client.progress_reports[token]):
        assert asyncio.get_running_loop().time() < deadline and not task.done()
        await asyncio.sleep(0.005)
    client.window_work_done_progress_cancel(T.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 60)
    assert result["ok"] is False and result["message"] == "export cancelled: nothing was written"
    assert not out.exists() and _leftovers(tmp_path) == []
    assert client.progress_reports[token][-1].kind == "end"
    # the server goes on: the same export, not cancelled, writes
    result = await export(client, uri=uri, target="hf", dims=TINY, output=str(out))
    assert result["ok"] and out.exists()


async def test_export_options_are_validated_like_the_cli(client: LanguageClient, tmp_path):
    uri = uri_of(tmp_path / "good2.ss")
    open_doc(client, uri, GOOD)
    await wait_version(client, uri, 1)
    result = await export(client, uri=uri, target="hf", dtype="q8_0", output=str(tmp_path / "o"))
    assert result["ok"] is False and "--dtype q8_0 is for gguf only" in result["message"]
    result = await export(client, uri=uri, target="hf", dims={"Q": 3}, output=str(tmp_path / "o"))
    assert result["ok"] is False and "`Q` is no dim of good2.ss; its dims are C, D" in result["message"]
    with pytest.raises(JsonRpcInvalidParams):
        await export(client, uri=uri, target="hf", seed="x")
    assert not (tmp_path / "o").exists()
