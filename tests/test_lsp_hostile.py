"""The language server under hostile traffic, over its real stdio: the reproductions of
../shared/repro/security/12_lsp_hostile.py as tests, and a seeded fuzz of random and
mutated JSON-RPC byte streams after which the server must still answer a hover.

Every server here is a subprocess (`python -m shapescript_server.main`) with a workspace
folder of its own; a probe is a hover on an open, checked document."""
import json
import os
import stat
import random
import subprocess
import sys

import pytest

from lsp_support import SERVER
from stdio_client import StdioClient

SOURCE = "dim D = 8\n\nfn f(x: [b D]) -> [b D]:\n    return x\n"
LIB = "dim D = 8\nmodel M:\n    w: [D D]\n\n@export(hf)\nfn classify(x: [b D], m: M) -> [b D]:\n    return x @ m.w\n"
LM = """dim V = 64
dim D = 32

model Lm:
    embed: [V D]
    lm_head: [V D]

@export(hf)
fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    return linear(embedding(ids, m.embed), m.lm_head)
"""


def uri(path) -> str:
    return "file://" + str(path)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Counted(dict):
    """The client's store of answers, counting every answer put in it, by kind."""

    def __init__(self):
        super().__init__()
        self.kinds: dict = {}

    def __setitem__(self, key, msg):
        err = msg.get("error")
        kind = "result" if err is None else {-32700: "ParseError", -32600: "InvalidRequest",
                                             -32602: "InvalidParams", -32603: "InternalError"}.get(
            err.get("code"), str(err.get("code")))
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        super().__setitem__(key, msg)


class Server:
    """A server on a workspace folder, with `m.ss` open and checked."""

    def __init__(self, root, folders=None, text=SOURCE):
        self.root = root
        self.probes = 0
        home = root.parent / "home"
        home.mkdir(exist_ok=True)
        self.c = StdioClient(SERVER, cwd=str(root), stderr=subprocess.DEVNULL,
                             env={**os.environ, "HOME": str(home)})
        self.c.answers = _Counted()
        folders = [str(root)] if folders is None else folders
        self.c.request("initialize", {
            "processId": None, "rootUri": uri(folders[0]) if folders else None, "capabilities": {},
            "workspaceFolders": [{"uri": uri(f), "name": "ws"} for f in folders]}, timeout=60)
        self.c.notify("initialized", {})
        self.uri = uri(root / "m.ss")
        (root / "m.ss").write_text(text)
        self.open(self.uri, text)
        assert self.diagnostics(self.uri) is not None

    def open(self, u, text):
        self.c.notify("textDocument/didOpen", {"textDocument": {"uri": u, "languageId": "shapescript",
                                                                "version": 1, "text": text}})

    def diagnostics(self, u, timeout=30):
        """The first diagnostics published for `u`."""
        while True:
            for n in list(self.c.notifications):
                if n.get("method") == "textDocument/publishDiagnostics" and n["params"]["uri"] == u:
                    return n["params"]["diagnostics"]
            try:
                _, msg = self.c.receive(timeout)
            except Exception:
                return None
            if "method" not in msg:
                self.c.answers[msg.get("id")] = msg
            elif not self.c.answer_server_request(msg):
                self.c.notifications.append(msg)

    def hover(self, u, line=3, character=11, timeout=30):
        return self.c.request("textDocument/hover", {"textDocument": {"uri": u},
                                                     "position": {"line": line, "character": character}},
                              timeout=timeout)

    def probe(self) -> bool:
        """A hover on the open document is answered with the type under the cursor (an id
        of its own: the fuzz's messages carry ids of theirs, answered too)."""
        self.probes += 1
        pid = f"probe-{self.probes}"
        self.c.send({"jsonrpc": "2.0", "id": pid, "method": "textDocument/hover",
                     "params": {"textDocument": {"uri": self.uri}, "position": {"line": 3, "character": 11}}})
        r = self.c.answer(pid, timeout=30)
        return "[b D]" in json.dumps(r.get("result"))

    def error_code(self, r):
        return (r.get("error") or {}).get("code")

    def close(self):
        if self.c.proc.poll() is None:
            self.c.proc.kill()
        self.c.proc.wait(10)


@pytest.fixture
def server(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = Server(ws)
    yield s
    s.close()


# ---------------------------------------------------------------- framing and JSON
@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deep_json_is_answered_invalid_request_with_its_id(server, depth):
    server.c.write(frame(b'{"jsonrpc":"2.0","id":99,"method":"textDocument/hover","params":'
                         + b"[" * depth + b"]" * depth + b"}"))
    r = server.c.answer(99, timeout=30)
    assert r["error"]["code"] == -32600 and "nested deeper than 100 levels" in r["error"]["message"]
    assert server.probe() and server.c.proc.poll() is None


def test_a_null_body_swallows_nothing(server):
    req = json.dumps({"jsonrpc": "2.0", "id": 500, "method": "textDocument/documentSymbol",
                      "params": {"textDocument": {"uri": server.uri}}}).encode()
    server.c.write(frame(b"null") + frame(req))
    assert server.c.answer(500, timeout=30)["result"][0]["name"] == "D"


def test_60_mb_of_garbage_then_a_request_is_answered(server):
    server.c.write(frame(b"x" * (60 * 1024 * 1024)))
    assert server.probe()


# ---------------------------------------------------------------- what is read
def test_special_files_and_files_outside_are_request_failed_not_read(server, tmp_path):
    os.mkfifo(server.root / "pipe.ss")
    secret = tmp_path / "secret.env"
    secret.write_text("AWS_SECRET_ACCESS_KEY = wJalrXUtnFEMI\n")
    for target, reason in (("/dev/zero", "outside the workspace folder"), (server.root / "pipe.ss", "FIFO"),
                           (secret, "outside the workspace folder")):
        for method, params in (("textDocument/hover", {"position": {"line": 0, "character": 3}}),
                               ("textDocument/diagnostic", {})):
            r = server.c.request(method, {"textDocument": {"uri": uri(target)}, **params}, timeout=30)
            assert server.error_code(r) == -32803 and reason in r["error"]["message"], r
            assert "AWS_SECRET" not in json.dumps(r) and "wJalr" not in json.dumps(r)
    assert server.probe()


def test_imports_of_special_files_are_E0214_at_the_import(server):
    """A special file inside the project can't be read (E0214); one outside it is no
    import at all (E0213, the import rule, decides first: nothing is opened)."""
    os.mkfifo(server.root / "pipe.ss")
    os.mknod(server.root / "zero.ss", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's twin
    for k, (target, code) in enumerate((("pipe.ss", "E0214"), ("zero.ss", "E0214"), ("/dev/zero", "E0213"))):
        u = uri(server.root / f"bomb{k}.ss")
        server.open(u, f'import "{target}"\n' + SOURCE)
        d = server.diagnostics(u)
        assert [(x["code"], x["range"]["start"]["line"]) for x in d] == [(code, 0)], target


def _e3306_fix(s: Server):
    u = uri(s.root / "lib.ss")
    (s.root / "lib.ss").write_text(LIB)
    s.open(u, LIB)
    diags = [d for d in s.diagnostics(u) if d["code"] == "E3306"]
    return s.c.request("textDocument/codeAction", {"textDocument": {"uri": u}, "range": diags[0]["range"],
                                                   "context": {"diagnostics": diags}}, timeout=30)


def test_the_workspace_fix_skips_a_fifo(server):
    os.mkfifo(server.root / "pipe.ss")
    r = _e3306_fix(server)
    assert r["result"][0]["title"].startswith("Make `m` the first parameter")
    assert server.probe()


def test_the_workspace_fix_with_a_root_of_slash_ends(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = Server(ws, folders=["/"])
    try:
        r = _e3306_fix(s)
        assert r["result"][0]["title"].startswith("Make `m` the first parameter")
    finally:
        s.close()


# ---------------------------------------------------------------- what is written
def _export(s: Server, **args):
    return s.c.request("workspace/executeCommand", {"command": "shapescript.export",
                                                    "arguments": [{"uri": s.uri, "target": "hf", "random": True,
                                                                   **args}]}, timeout=120)


def test_the_editor_export_writes_only_inside_the_workspace(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    (outside / "userdir").mkdir(parents=True)
    (outside / "userdir" / "precious.txt").write_text("x")
    s = Server(ws, text=LM)
    try:
        for output in ("../outside/userdir", str(outside / "abs"), "~/out"):
            r = _export(s, output=output, force=True)["result"]
            assert r["ok"] is False and "is outside the workspace folder" in r["message"], r
        (ws / "link").symlink_to(outside, target_is_directory=True)
        r = _export(s, output="link/x", force=True)["result"]
        assert r["ok"] is False and "is outside the workspace folder" in r["message"]
        assert sorted(os.listdir(outside)) == ["userdir"]
        assert os.listdir(outside / "userdir") == ["precious.txt"]
        r = _export(s, output="inside")["result"]
        assert r["ok"] is True and os.path.isfile(ws / "inside" / "model.safetensors"), r
        r = _export(s, output="inside")["result"]
        assert r["ok"] is False and "--force" in r["message"]  # the CLI's rule: no silent replace
    finally:
        s.close()


# ---------------------------------------------------------------- the protocol
def test_requests_after_shutdown_are_invalid_request_and_exit_says_how_it_ended(server):
    assert server.c.request("shutdown", None)["result"] is None
    r = server.hover(server.uri)
    assert server.error_code(r) == -32600
    server.c.notify("exit", None)
    assert server.c.proc.wait(30) == 0


def test_exit_without_shutdown_exits_1(server):
    server.c.notify("exit", None)
    assert server.c.proc.wait(30) == 1


def test_uris_no_file_can_have_are_invalid_params(server):
    for u in ("file:///%00", "file:///tmp/\ud800x.ss"):
        assert server.error_code(server.hover(u)) == -32602
    r = server.c.request("workspace/executeCommand", {"command": "shapescript.export", "arguments": [
        {"uri": "file:///tmp/a\u0000b.ss", "target": "hf", "random": True}]})
    assert server.error_code(r) == -32602
    assert server.probe()


# ---------------------------------------------------------------- fuzz
def _valid_messages(u: str) -> list:
    pos = {"line": 3, "character": 11}
    td = {"uri": u}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"textDocument": td, "position": pos}},
        {"jsonrpc": "2.0", "id": "s", "method": "textDocument/documentSymbol", "params": {"textDocument": td}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": u + "x", "version": 2}, "contentChanges": [{"text": "dim"}]}},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/completion", "params": {"textDocument": td, "position": pos}},
        {"jsonrpc": "2.0", "id": 4, "method": "workspace/executeCommand",
         "params": {"command": "shapescript.export", "arguments": [{"uri": "file:///dev/zero", "target": "hf"}]}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
    ]


def _mutate(rng: random.Random, body: bytes) -> bytes:
    b = bytearray(body)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            b[i:i] = bytes(rng.choice(b'{}[]":,\\\x00\xff\n') for _ in range(rng.randint(1, 8)))
        elif op == 2:
            del b[i:i + rng.randint(1, 16)]
        elif op == 3:
            b[i:i] = rng.choice([b"[" * 2000, b"{\"a\":" * 500, b"1e99999", b"-0", b"\"\\ud800\"", b"null",
                                 b"99999999999999999999999999", b"Content-Length: 5\r\n\r\n"])
        elif op == 4:
            b = b[:i]
        else:
            b = bytearray(json.dumps(rng.choice([None, [], [{}], 0, "x", {"jsonrpc": "2.0"}, {"id": {}},
                                                 {"jsonrpc": "2.0", "id": [1], "method": 7}])).encode())
    return bytes(b)


def _hostile_stream(rng: random.Random, u: str, n: int) -> tuple:
    """(bytes, how many frames) of valid, mutated and random messages, some lying about
    their length or their header."""
    out, frames = [], 0
    valid = [json.dumps(m).encode() for m in _valid_messages(u)]
    for _ in range(n):
        kind = rng.randrange(5)
        if kind == 0:
            body = rng.choice(valid)
        elif kind in (1, 2):
            body = _mutate(rng, rng.choice(valid))
        elif kind == 3:
            body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        else:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 100))))  # junk, no header
            continue
        length = len(body) + rng.choice([0, 0, 0, -3, 5, 1000])
        header = rng.choice([b"Content-Length: %d\r\n\r\n", b"content-length:%d\n\n",
                             b"Content-Length: %d\r\nContent-Type: x\r\n\r\n"]) % max(length, 0)
        out.append(header + body)
        frames += 1
    return b"".join(out), frames


def test_fuzz_random_and_mutated_streams_leave_the_server_answering(server, capsys):
    rng = random.Random(16)  # seeded: the same streams every run
    streams, frames, sent = 20, 0, 0
    for _ in range(streams):
        data, k = _hostile_stream(rng, server.uri, 80)
        frames += k
        sent += len(data)
        server.c.write(data)
        # whatever the stream left half-read, a well-framed probe after a blank line is read:
        # a lying length swallows at most up to the next header
        server.c.write(b"\r\n\r\n")
        assert server.c.proc.poll() is None, "the server died"
        assert server.probe(), "the server no longer answers a hover"
    kinds = dict(server.c.answers.kinds)
    assert kinds.get("InternalError", 0) == 0, kinds  # every bad message is the client's error, said so
    assert kinds.get("ParseError", 0) > 0 and kinds.get("InvalidRequest", 0) > 0  # the fuzz reached them
    with capsys.disabled():
        print(f"\nfuzz: {streams} streams, {frames} frames, {sent:,} bytes; answers by kind: {kinds}; "
              f"a hover answered after each stream", file=sys.stderr)
