"""`workspace/executeCommand` `shapescript.export`: the CLI's backend, work-done progress,
a closing message; bad arguments answered with an error."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from lsp_support import config, initialize, open_doc, uri_of, wait_version

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
    assert result["message"] == "the checks pass, but the hf writer is not available yet" or result["ok"]
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
