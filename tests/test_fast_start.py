"""The first messages answered before pygls is loaded (shapescript_server/fast_start.py):
a second start with the same client set-up answers initialize exactly as the server
did, publishes the kept diagnostics of the first document opened, loads neither pygls's
protocol, lsprotocol's types, the parser nor the checker for that, and hands the rest
to the server, which sends neither again; a client set-up it has no answer for, or a
kept answer that is not private, is left to the server."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time

import pytest

from shapescript_server import fast_start
from lsp_support import ROOT, SERVER
from stdio_client import StdioClient

LIB = "dim D = 4\n\nfn h(x: [D]) -> [D]:\n    return x\n"
MAIN = 'import "lib.ss"\n\n@export(hff)\nfn f(x: [b D]) -> [b D]:\n    return h(x)\n'
CAPS = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}


def _initialize(root) -> dict:
    return {"processId": None, "rootUri": root.as_uri(), "workspaceFolders": [{"uri": root.as_uri(), "name": "w"}],
            "capabilities": CAPS}


def _did_open(path) -> dict:
    return {"textDocument": {"uri": path.as_uri(), "languageId": "shapescript", "version": 1, "text": MAIN}}


def _session(root, cache) -> tuple:
    """(the initialize answer, the publishes of main.ss before the answer to a request
    sent once one came and the diagnostics are kept)."""
    env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": str(cache)}
    c = StdioClient(SERVER, cwd=str(root), env=env, stderr=subprocess.DEVNULL)
    try:
        answer = c.request("initialize", _initialize(root))["result"]
        c.notify("initialized", {})
        c.notify("textDocument/didOpen", _did_open(root / "main.ss"))
        got: list = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (got and any(n.endswith(".diags.json") for n in os.listdir(cache))):
            try:
                _, msg = c.receive(0.2)
            except queue.Empty:
                continue
            if msg.get("method") == "textDocument/publishDiagnostics":
                got.append(msg["params"]["diagnostics"])
            elif "method" not in msg:
                c.answers[msg.get("id")] = msg
        symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": (root / "main.ss").as_uri()}})
        assert [s["name"] for s in symbols["result"]] == ["lib.ss", "f"]  # the server took over
        got += [m["params"]["diagnostics"] for m in c.notifications if m.get("method") == "textDocument/publishDiagnostics"]
        assert c.answers == {}  # in particular, initialize is answered once
        return answer, got
    finally:
        c.close()


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "lib.ss").write_text(LIB)
    (tmp_path / "main.ss").write_text(MAIN)
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_a_second_start_answers_early_and_the_server_sends_nothing_twice(project):
    answer, first = _session(project, project / "cache")
    assert sorted(d["code"] for d in first[-1]) == ["E0212", "E0401"]
    assert any(n.endswith(fast_start.ANSWER_SUFFIX) for n in os.listdir(project / "cache"))
    again, second = _session(project, project / "cache")
    assert again == answer
    assert second == [first[-1]]  # the kept diagnostics, once: neither the server nor its check repeats them


_PRELUDE = """
import json, os, sys
from shapescript_server import fast_start
msgs = json.loads(sys.argv[1])
r, w = os.pipe()
for m in msgs:
    body = json.dumps(m).encode()
    os.write(w, b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
out = []
early = fast_start.run(r, out.append)
heavy = ("lsprotocol", "cattrs", "lark", "numpy", "torch", "transformers", "pygls.protocol", "pygls.lsp",
         "shapescript_core.workspace", "shapescript_core.check.function", "shapescript_core.compile",
         "shapescript_core.export", "shapescript_core.syntax.parser")
print(json.dumps({"out": out, "answered": early.answered, "read": len(early.messages), "shown": list(early.shown),
                  "loaded": sorted(m for m in sys.modules if m.startswith(heavy))}))
"""


def _prelude(project, messages) -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": str(project / "cache")}
    done = subprocess.run([sys.executable, "-c", _PRELUDE, json.dumps(messages)], env=env, cwd=str(project),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_early_answer_and_publish_load_no_pygls_protocol_parser_or_checker(project):
    answer, first = _session(project, project / "cache")
    uri = (project / "main.ss").as_uri()
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _initialize(project)},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {}}},
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": _did_open(project / "main.ss")},
                {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                 "params": {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 3}}}]
    got = _prelude(project, messages)  # all five in one read
    assert got["out"][0] == {"jsonrpc": "2.0", "id": 1, "result": answer}
    assert got["out"][1] == {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                             "params": {"uri": uri, "version": 1, "diagnostics": first[-1]}}
    assert (got["answered"], got["read"], got["shown"]) == (1, 5, [uri])  # the hover is the server's
    assert got["loaded"] == []


def test_a_client_set_up_without_a_kept_answer_is_left_to_the_server(project):
    _session(project, project / "cache")
    other = {**_initialize(project), "capabilities": {}}
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": other},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}}]
    got = _prelude(project, messages)
    assert (got["out"], got["answered"], got["shown"]) == ([], None, [])
    assert got["read"] >= 1  # the initialize (and what came with it) goes to the server


def test_a_kept_answer_is_given_only_to_the_same_set_up_and_from_a_private_folder(project, caplog):
    params = _initialize(project)
    result = {"capabilities": {"hoverProvider": True}, "serverInfo": {"name": "shapescript-lsp"}}
    assert fast_start.save_answer(params, result)
    assert fast_start.load_answer(params) == result
    assert fast_start.load_answer({**params, "rootUri": "file:///elsewhere"}) == result  # folders don't change it
    assert fast_start.load_answer({**params, "capabilities": {}}) is None
    assert fast_start.load_answer({**params, "initializationOptions": {"diagnosticMode": "pull"}}) is None
    os.chmod(project / "cache", 0o777)
    assert fast_start.load_answer(params) is None
    assert "not private" in caplog.text


@pytest.mark.parametrize("damage", ["garbage", "other key", "no capabilities"])
def test_a_broken_or_foreign_kept_answer_is_not_given(project, damage):
    params = _initialize(project)
    assert fast_start.save_answer(params, {"capabilities": {}})
    (name,) = [n for n in os.listdir(project / "cache") if n.endswith(fast_start.ANSWER_SUFFIX)]
    path = project / "cache" / name
    good = json.loads(path.read_text())
    path.write_text({"garbage": "{",
                     "other key": json.dumps({**good, "key": "0" * 64}),
                     "no capabilities": json.dumps({**good, "result": {"serverInfo": {}}})}[damage])
    assert fast_start.load_answer(params) is None


def test_the_server_itself_starts_without_numpy_torch_or_transformers():
    """When there is nothing to answer early (a first start), the server is built with
    the checker, never with what only an export run needs."""
    script = ("import sys\nfrom shapescript_server.features import create_server\ncreate_server()\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('numpy', 'torch', 'transformers', 'gguf', 'safetensors', 'jinja2')))")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
