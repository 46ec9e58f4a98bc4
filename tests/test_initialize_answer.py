"""The answer to initialize shipped with the server (initialize_answer.py): the same as
the server's own handler gives, for every kind of client, and used only with the pygls
and lsprotocol it was made with."""
from __future__ import annotations

import itertools
import json
import os
import sys

import pytest

from lsp_support import ROOT
from shapescript_server import initialize_answer

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import initialize_answers as gen  # noqa: E402

# what pygls's capability builder and our server read from the client, each set or not
TOGGLES = {
    "pull": {"textDocument": {"diagnostic": {"dynamicRegistration": False}}},
    "refresh": {"workspace": {"diagnostics": {"refreshSupport": True}}},
    "prepare": {"textDocument": {"rename": {"prepareSupport": True, "prepareSupportDefaultBehavior": 1}}},
    "save": {"textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": True, "didSave": True}}},
    "notebook": {"notebookDocument": {"synchronization": {"dynamicRegistration": True}}},
    "files": {"workspace": {"fileOperations": {k: True for k in ("willCreate", "didCreate", "willRename",
                                                                "didRename", "willDelete", "didDelete")}}},
    "encodings": {"general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]}},
    "markdown": {"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}}},
}


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _clients():
    names = list(TOGGLES)
    for n in range(len(names) + 1):
        for combo in itertools.combinations(names, n):
            if n > 3 and combo != tuple(names):
                continue  # every set of up to three, and all of them
            caps: dict = {}
            for name in combo:
                caps = _merge(caps, TOGGLES[name])
            yield "+".join(combo) or "none", caps


def test_the_shipped_file_is_what_the_server_answers_now():
    with open(initialize_answer.ANSWERS_FILE, encoding="utf-8") as fh:
        assert fh.read() == gen.render(gen.answers()), "run scripts/initialize_answers.py"


@pytest.fixture(scope="module")
def server():
    ls = gen.new_server()
    yield ls
    ls.shutdown_core()


@pytest.mark.parametrize("mode", [None, "auto", "push", "pull", 7])
def test_every_client_gets_the_servers_own_answer(mode, server):
    seen = set()
    for name, caps in _clients():
        params = {"processId": None, "rootUri": None, "capabilities": caps}
        if mode is not None:
            params["initializationOptions"] = {"diagnosticMode": mode}
        shipped = initialize_answer.shipped(params)
        assert shipped is not None, name
        assert shipped == gen.server_answer(params, server), name
        seen.add(initialize_answer.variant(params))
    assert seen == ({"push", "push prepareRename"} if mode == "push" else
                    {"pull", "pull prepareRename"} if mode == "pull" else set(gen.CLIENTS))


def test_answers_made_with_another_pygls_are_not_used(tmp_path, monkeypatch, caplog):
    with open(initialize_answer.ANSWERS_FILE, encoding="utf-8") as fh:
        data = json.load(fh)
    params = {"processId": None, "capabilities": {}}
    for damage, text in [("other pygls", json.dumps({**data, "libraries": {**data["libraries"], "pygls": "0.0.1"}})),
                         ("garbage", "{"), ("other format", json.dumps({**data, "format": 0}))]:
        path = tmp_path / "answers.json"
        path.write_text(text)
        monkeypatch.setattr(initialize_answer, "ANSWERS_FILE", str(path))
        monkeypatch.setattr(initialize_answer, "_loaded", None)
        caplog.clear()
        with caplog.at_level("INFO", logger="shapescript.server"):
            assert initialize_answer.shipped(params) is None, damage
        assert caplog.records, damage  # and it says why


def test_the_installed_versions_are_read_from_the_dist_info():
    import lsprotocol
    import pygls  # noqa: F401
    from importlib.metadata import version
    assert initialize_answer.libraries() == {"pygls": version("pygls"), "lsprotocol": version("lsprotocol")}
    assert lsprotocol is not None
