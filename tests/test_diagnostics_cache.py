"""The diagnostics kept on disk between sessions (shapescript_server/diagnostics_cache.py):
a file opened again with the same text, settings and imports shows them at didOpen,
before its parse, and they are exactly what the check publishes (which then sends
nothing more); a changed import, text or setting, or a cache file that is hostile,
foreign or too large, is no cache."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import time

import pytest

from shapescript_core.files import Access
from shapescript_server import diagnostics_cache as dc
from lsp_support import ROOT, SERVER
from stdio_client import StdioClient

LIB = "dim D = 4\n\nfn h(x: [D]) -> [D]:\n    return x\n"
MAIN = """\
import "lib.ss"

fn f(x: [D]) -> [D]:
    return h(x)

@export(hff)
fn exported(x: [b D]) -> [b D]:
    return x

fn broken(x: [D]) -> [D]:
    return x +
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _none(path):
    return None


# ---------------------------------------------------------------- the store itself
def test_an_entry_is_read_back_only_for_the_same_text_settings_and_imports(cache):
    deps = [("/w/lib.ss", dc.text_hash(LIB)), ("/w/missing.ss", None)]
    diags = [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
              "message": "m", "code": "E0101"}]
    assert dc.save("/w/main.ss", dc.text_hash(MAIN), "s1", deps, diags)
    now = {"/w/lib.ss": dc.text_hash(LIB), "/w/missing.ss": None}
    assert dc.load("/w/main.ss", MAIN, "s1", now.get) == diags
    assert dc.load("/w/main.ss", MAIN.replace("\n", "\r"), "s1", now.get) == diags  # the same text to the workspace
    assert dc.load("/w/main.ss", MAIN.replace("\n", "\r\n"), "s1", now.get) is None  # other offsets
    assert dc.load("/w/main.ss", MAIN + "\n", "s1", now.get) is None
    assert dc.load("/w/main.ss", MAIN, "s2", now.get) is None
    assert dc.load("/w/other.ss", MAIN, "s1", now.get) is None
    assert dc.load("/w/main.ss", MAIN, "s1", {**now, "/w/lib.ss": dc.text_hash(LIB + "\n")}.get) is None
    assert dc.load("/w/main.ss", MAIN, "s1", {**now, "/w/missing.ss": dc.text_hash("")}.get) is None


def test_an_import_that_could_not_be_read_must_still_be_unread_for_the_same_reason(cache, tmp_path):
    inside, outside = tmp_path / "w", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (outside / "far.ss").write_text(LIB)
    access = Access.within([str(inside)])
    main, missing, far = str(inside / "main.ss"), str(inside / "lib.ss"), str(outside / "far.ss")
    deps = [(missing, dc.unread("missing")), (far, dc.unread("outside"))]
    assert dc.save(main, dc.text_hash(MAIN), "s", deps, [])
    assert dc.kept(main, MAIN, "s", {}, access, _none) == []
    assert dc.kept(main, MAIN, "s", {}, Access.within([str(inside), str(outside)]), _none) is None  # readable now
    (inside / "lib.ss").write_text(LIB)
    assert dc.kept(main, MAIN, "s", {}, access, _none) is None  # no longer missing
    assert dc.kept(main, MAIN, "s", {missing: LIB}, access, _none) is None  # open in the editor


def test_another_checker_reads_another_entry(cache, monkeypatch):
    assert dc.save("/w/main.ss", dc.text_hash(MAIN), "s", [], [])
    assert dc.load("/w/main.ss", MAIN, "s", _none) == []
    monkeypatch.setattr(dc, "_version", "another-checker")
    assert dc.load("/w/main.ss", MAIN, "s", _none) is None


@pytest.mark.parametrize("damage", ["garbage", "pickle", "other path", "old format", "bad diagnostic", "too large"])
def test_a_hostile_or_foreign_entry_is_no_cache(cache, damage, monkeypatch):
    assert dc.save("/w/main.ss", dc.text_hash(MAIN), "s", [], [])
    (name,) = [n for n in os.listdir(cache) if n.endswith(dc.SUFFIX)]
    good = json.loads((cache / name).read_text())
    bad = {"garbage": b"{not json",
           "pickle": b"\x80\x04cos\nsystem\n.",
           "other path": json.dumps({**good, "path": "/elsewhere.ss"}).encode(),
           "old format": json.dumps({**good, "format": dc.FORMAT - 1}).encode(),
           "bad diagnostic": json.dumps({**good, "diagnostics": [{"message": 1}]}).encode(),
           "too large": json.dumps({**good, "pad": "x" * 64}).encode()}[damage]
    if damage == "too large":
        monkeypatch.setattr(dc, "MAX_BYTES", len(bad) - 1)
    (cache / name).write_bytes(bad)
    assert dc.load("/w/main.ss", MAIN, "s", _none) is None


def test_an_entry_others_can_write_is_not_read(cache, caplog):
    assert dc.save("/w/main.ss", dc.text_hash(MAIN), "s", [], [])
    assert dc.load("/w/main.ss", MAIN, "s", _none) == []
    os.chmod(cache, 0o777)
    assert dc.load("/w/main.ss", MAIN, "s", _none) is None
    assert "not private" in caplog.text


def test_the_folder_keeps_at_most_max_entries(cache, monkeypatch):
    monkeypatch.setattr(dc, "MAX_ENTRIES", 3)
    for k in range(5):
        assert dc.save(f"/w/m{k}.ss", dc.text_hash(MAIN), "s", [], [])
        os.utime(dc._file_for(f"/w/m{k}.ss"), ns=(k * 10**9, k * 10**9))  # written in this order
    assert len([n for n in os.listdir(cache) if n.endswith(dc.SUFFIX)]) == 3
    assert [k for k in range(5) if dc.load(f"/w/m{k}.ss", MAIN, "s", _none) == []] == [2, 3, 4]


def test_an_entry_over_the_limit_is_not_written(cache, monkeypatch):
    monkeypatch.setattr(dc, "MAX_BYTES", 100)
    diags = [{"range": {}, "message": "x" * 200}]
    assert dc.save("/w/main.ss", dc.text_hash(MAIN), "s", [], diags) is False
    assert dc.load("/w/main.ss", MAIN, "s", _none) is None


# ---------------------------------------------------------------- end to end
class _Session:
    """A server over stdio with one workspace folder and one document opened."""

    def __init__(self, root, cache_dir, path, text):
        env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": str(cache_dir)}
        self.c = StdioClient(SERVER, cwd=str(root), env=env, stderr=subprocess.DEVNULL)
        self.uri = path.as_uri()
        self.c.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                      "workspaceFolders": [{"uri": root.as_uri(), "name": "w"}],
                                      "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
        self.c.notify("initialized", {})
        self.c.notify("textDocument/didOpen", {"textDocument": {"uri": self.uri, "languageId": "shapescript",
                                                                "version": 1, "text": text}})

    def publishes(self, until) -> list:
        """The file's publishes (their diagnostics), until `until(publishes)` holds."""
        got: list = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not until(got):
            try:
                _, msg = self.c.receive(0.2)
            except queue.Empty:
                continue
            if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == self.uri:
                got.append(msg["params"]["diagnostics"])
        return got

    def settled(self) -> list:
        """The publishes that came before the answer to a request sent now: the check of
        the opened text is queued before it, and publishes before it answers."""
        self.c.request("textDocument/documentSymbol", {"textDocument": {"uri": self.uri}})
        got = [m["params"]["diagnostics"] for m in self.c.notifications
               if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == self.uri]
        self.c.notifications.clear()
        return got

    def close(self):
        self.c.close()


def _kept(folder) -> list:
    return [n for n in os.listdir(folder) if n.endswith(dc.SUFFIX)] if folder.is_dir() else []


def _first_session(tmp_path, text):
    folder = tmp_path / "cache"
    s = _Session(tmp_path, folder, tmp_path / "main.ss", text)
    try:
        got = s.publishes(lambda g: len(g) >= 1 and _kept(folder))
    finally:
        s.close()
    assert _kept(folder), "the diagnostics were not kept"
    return got[-1]


def _codes(diags) -> list:
    return sorted(d["code"] for d in diags)


def test_a_reopened_file_shows_its_kept_diagnostics_and_the_check_adds_nothing(tmp_path):
    (tmp_path / "lib.ss").write_text(LIB)
    complete = _first_session(tmp_path, MAIN)
    assert _codes(complete) == ["E0101", "E0212"]
    (fix,) = [f for d in complete for f in (d.get("data") or {}).get("fixes", [])]  # E0212's
    assert fix["versions"] == {(tmp_path / "main.ss").as_uri(): 1}
    (name,) = _kept(tmp_path / "cache")
    assert json.loads((tmp_path / "cache" / name).read_text())["diagnostics"] == complete
    s = _Session(tmp_path, tmp_path / "cache", tmp_path / "main.ss", MAIN)
    try:
        first = s.publishes(lambda g: len(g) >= 1)[0]
        assert first == complete
        assert s.settled() == []  # the check ran and found the same: nothing sent again
    finally:
        s.close()


def test_kept_diagnostics_are_shown_first_and_replaced_when_the_check_differs(tmp_path):
    """What the editor gets at didOpen is the kept entry itself (here altered by hand),
    and the check's own diagnostics follow because they differ."""
    (tmp_path / "lib.ss").write_text(LIB)
    complete = _first_session(tmp_path, MAIN)
    (name,) = _kept(tmp_path / "cache")
    entry = tmp_path / "cache" / name
    data = json.loads(entry.read_text())
    data["diagnostics"][0]["message"] = "kept by an earlier session"
    entry.write_text(json.dumps(data))
    s = _Session(tmp_path, tmp_path / "cache", tmp_path / "main.ss", MAIN)
    try:
        got = s.publishes(lambda g: len(g) >= 2)
        assert got[0][0]["message"] == "kept by an earlier session" and got[0][1:] == complete[1:]
        assert got[1] == complete
    finally:
        s.close()


def test_a_changed_import_is_not_shown_from_the_cache(tmp_path):
    (tmp_path / "lib.ss").write_text(LIB)
    assert _codes(_first_session(tmp_path, MAIN)) == ["E0101", "E0212"]
    (tmp_path / "lib.ss").write_text(LIB.replace("-> [D]", "-> [D D]"))  # h's result changes: f's return is wrong
    s = _Session(tmp_path, tmp_path / "cache", tmp_path / "main.ss", MAIN)
    try:
        first = s.publishes(lambda g: len(g) >= 1)[0]
        assert _codes(first) == ["E0101", "E0212", "E0409"]
    finally:
        s.close()


def test_a_changed_text_is_not_shown_from_the_cache(tmp_path):
    (tmp_path / "lib.ss").write_text(LIB)
    _first_session(tmp_path, MAIN)
    edited = MAIN.replace("    return x +\n", "    return x\n")
    s = _Session(tmp_path, tmp_path / "cache", tmp_path / "main.ss", edited)
    try:
        first = s.publishes(lambda g: len(g) >= 1)[0]
        assert _codes(first) == ["E0212"]
    finally:
        s.close()


# ---------------------------------------------------------------- a client that pulls
PULL_CAPS = {"textDocument": {"diagnostic": {}}, "workspace": {"diagnostics": {"refreshSupport": True}}}
BIG = "".join(f"dim Pad{i} = {i + 1}\n" for i in range(1000)) + MAIN  # its check comes well after the first pull


def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _PullSession:
    def __init__(self, root, text):
        env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": str(root / "cache")}
        self.c = StdioClient(SERVER, cwd=str(root), env=env, stderr=subprocess.DEVNULL)
        self.uri, self.text = (root / "main.ss").as_uri(), text
        self.asked: list = []  # the methods of the requests the server sent
        answer = self.c.answer_server_request

        def record(msg: dict) -> bool:
            if "id" in msg and "method" in msg:
                self.asked.append(msg["method"])
            return answer(msg)
        self.c.answer_server_request = record
        self.c.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                      "workspaceFolders": [{"uri": root.as_uri(), "name": "w"}],
                                      "capabilities": PULL_CAPS})
        self.c.notify("initialized", {})

    def open_and_pull(self) -> dict:
        """didOpen and the first pull in one write, as an editor restoring a file sends them."""
        self.c.next_id += 1
        self.c.write(_frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": self.uri, "languageId": "shapescript", "version": 1, "text": self.text}}})
            + _frame({"jsonrpc": "2.0", "id": self.c.next_id, "method": "textDocument/diagnostic",
                      "params": {"textDocument": {"uri": self.uri}}}))
        return self.c.answer(self.c.next_id)["result"]

    def pull(self, previous=None) -> dict:
        return self.c.request("textDocument/diagnostic", {"textDocument": {"uri": self.uri},
                                                          "previousResultId": previous})["result"]

    def after_the_check(self):
        """Returns once the check of the opened text is done: a large file's check is
        queued behind the first request; a second request queues behind the check."""
        for _ in range(2):
            self.c.request("textDocument/documentSymbol", {"textDocument": {"uri": self.uri}})

    def close(self):
        self.c.close()


def _pull_first_session(tmp_path) -> list:
    """The complete diagnostics of a first session's pull, once kept: its first pull
    was answered with the syntax errors of BIG's first lines (none), the check's
    diagnostics are kept and the client asked to pull again."""
    (tmp_path / "lib.ss").write_text(LIB)
    s = _PullSession(tmp_path, BIG)
    try:
        first = s.open_and_pull()
        assert first["items"] == []  # fast_start.py: the first lines' syntax errors
        deadline = time.monotonic() + 60
        while not _kept(tmp_path / "cache") and time.monotonic() < deadline:
            time.sleep(0.1)
        complete = s.pull(first["resultId"])["items"]
        assert "workspace/diagnostic/refresh" in s.asked  # sent before that pull's answer
    finally:
        s.close()
    assert _kept(tmp_path / "cache")
    return complete


def test_a_pulling_client_gets_the_kept_diagnostics_as_its_first_answer(tmp_path):
    complete = _pull_first_session(tmp_path)
    assert _codes(complete) == ["E0101", "E0212"]
    s = _PullSession(tmp_path, BIG)
    try:
        first = s.open_and_pull()
        # answered before pygls is loaded (fast_start.py), from the kept diagnostics
        assert first["resultId"].startswith("early-") and first["items"] == complete
        s.after_the_check()
        assert "workspace/diagnostic/refresh" not in s.asked  # the check found the same
    finally:
        s.close()


def test_a_pulling_client_is_asked_to_pull_again_when_the_check_differs(tmp_path):
    complete = _pull_first_session(tmp_path)
    (name,) = _kept(tmp_path / "cache")
    entry = tmp_path / "cache" / name
    data = json.loads(entry.read_text())
    data["diagnostics"][0]["message"] = "kept by an earlier session"
    entry.write_text(json.dumps(data))
    s = _PullSession(tmp_path, BIG)
    try:
        first = s.open_and_pull()
        assert first["resultId"].startswith("early-") and first["items"][0]["message"] == "kept by an earlier session"
        s.after_the_check()
        assert "workspace/diagnostic/refresh" in s.asked
        again = s.pull(first["resultId"])
        assert again["items"] == complete
    finally:
        s.close()
