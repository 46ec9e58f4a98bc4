"""The server's own machinery, without an editor: stale versions are never published,
incremental changes apply as the client applies them, malformed messages get an error
answer, and only shapescript_server/ knows LSP."""
from __future__ import annotations

import ast
import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as T

from lsp_support import CONVERTER, ROOT, RawServer, uri_of
from shapescript_server import diagnostics as D
from shapescript_server import first_publish
from shapescript_server.app import ShapeScriptServer
from shapescript_server.documents import Documents
from shapescript_server.transport import Framer, ParseError
from shapescript_core.syntax.source import LineIndex

TEXT = "dim D = 4\n\nfn f(x: [b D]) -> [b D]:\n    return x\n"


def make_server():
    """A server with no transport: jobs queue up until run, publishes are recorded."""
    ls = ShapeScriptServer()
    ls.sent = []
    ls.jobs = []
    ls.later = []
    ls.publish_json = lambda params: ls.sent.append(T.PublishDiagnosticsParams(
        uri=params["uri"], version=params["version"],
        diagnostics=[CONVERTER.structure(d, T.Diagnostic) for d in params["diagnostics"]]))
    ls.submit = lambda name, fn: ls.jobs.append(fn)
    ls.call_soon = lambda fn, *args: ls.later.append((fn, args))
    return ls


def run(items):
    while items:
        item = items.pop(0)
        if isinstance(item, tuple):
            item[0](*item[1])
        else:
            item()


def change(ls, uri, version, text):
    ls.docs.change(uri, [T.TextDocumentContentChangeWholeDocument(text=text)], version)
    D.schedule_check(ls, uri)


def test_a_check_for_a_version_the_client_moved_past_is_not_published():
    ls = make_server()
    uri = "file:///tmp/sched/a.ss"
    ls.docs.open(uri, TEXT, 1)
    D.schedule_check(ls, uri)
    change(ls, uri, 2, TEXT.replace("return x", "return y"))
    run(ls.jobs)  # version 1's job sees version 2 queued: no check, no publish
    run(ls.later)
    assert [p.version for p in ls.sent] == [2]
    assert [d.code for d in ls.sent[0].diagnostics] == ["E0201"]
    assert ls.ws.file("/tmp/sched/a.ss").text == TEXT.replace("return x", "return y")


def test_a_result_that_arrives_after_the_client_moved_on_is_dropped():
    ls = make_server()
    uri = "file:///tmp/sched/b.ss"
    ls.docs.open(uri, TEXT, 1)
    D.schedule_check(ls, uri)
    run(ls.jobs)  # checked version 1 ...
    ls.docs.change(uri, [T.TextDocumentContentChangeWholeDocument(text=TEXT + "\n")], 2)  # ... the client moves on
    run(ls.later)
    assert ls.sent == []
    D.schedule_check(ls, uri)
    run(ls.jobs)
    run(ls.later)
    assert [p.version for p in ls.sent] == [2]


def test_a_closed_document_is_not_published():
    ls = make_server()
    uri = "file:///tmp/sched/c.ss"
    ls.docs.open(uri, TEXT, 1)
    D.schedule_check(ls, uri)
    run(ls.jobs)
    ls.docs.close(uri)
    run(ls.later)
    assert ls.sent == []


ALPHABET = st.sampled_from(["a", "b", "\n", " ", "é", "😀", "𝔸", "\r\n", "\t", "x\ny"])


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200), st.lists(ALPHABET, max_size=4).map("".join)),
                min_size=1, max_size=6))
def test_incremental_changes_apply_as_the_client_applies_them(text, edits):
    docs = Documents()
    uri = "file:///tmp/docs/x.ss"
    doc = docs.open(uri, text, 1)
    for k, (a, b, new) in enumerate(edits):
        a, b = sorted((min(a, len(text)), min(b, len(text))))
        lines = LineIndex(text)
        (sl, sc), (el, ec) = lines.utf16_position(a), lines.utf16_position(b)
        docs.change(uri, [T.TextDocumentContentChangePartial(
            range=T.Range(T.Position(sl, sc), T.Position(el, ec)), text=new)], k + 2)
        text = text[:a] + new + text[b:]
        assert doc.text == text
        assert doc.starts == LineIndex(text).starts
    assert doc.version == len(edits) + 1


def test_malformed_messages_get_an_error_answer_and_the_server_goes_on(tmp_path):
    srv = RawServer()
    try:
        assert "result" in srv.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        srv.notify("initialized", {})
        bad = srv.request("textDocument/hover", {"textDocument": 5})
        assert bad["error"]["code"] == -32602  # invalid params
        assert srv.request("shapescript/nothing", {})["error"]["code"] == -32601  # no such method
        srv.notify("textDocument/didChange", {"textDocument": {"uri": 3}, "contentChanges": "x"})
        srv.send_bytes(b"{this is not json")
        srv.send_bytes(b'{"jsonrpc": "2.0", "id": 99}')
        srv.send_bytes(b'[{"jsonrpc": "2.0", "id": 100, "method": "shutdown"}]')  # a batch: not in LSP
        srv.send_bytes(b'{"id": 101, "method": "textDocument/hover", "params": {}}')  # no "jsonrpc"
        uri = uri_of(tmp_path / "after.ss")
        srv.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shapescript",
                                                             "version": 1, "text": TEXT}})
        ok = srv.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 3, "character": 11}})
        assert "x: [b D] f32" in ok["result"]["contents"]["value"]
        assert srv.answers[None]["error"]["code"] in (-32700, -32600)  # broken JSON, a batch: id null
        assert srv.answers.pop(101)["error"]["code"] == -32600  # invalid request
    finally:
        srv.close()
    assert srv.proc.returncode == 0


def _hover_frame(msg_id: int, uri: str, length_delta: int = 0, name: bytes = b"Content-Length") -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover",
                       "params": {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 11}}}).encode()
    return name + b": %d\r\n\r\n" % (len(body) + length_delta) + body


def _open_raw(srv: RawServer, uri: str, text: str = TEXT, version: int = 1):
    srv.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shapescript",
                                                         "version": version, "text": text}})


def _hover_text(answer: dict) -> str:
    assert "error" not in answer, answer
    return answer["result"]["contents"]["value"]


def test_a_wrong_content_length_or_a_lowercase_header_does_not_deafen_the_server(tmp_path):
    """pygls 2.1 reads `Content-Length` case-sensitively and then exactly that many bytes:
    one bad header and nothing is answered again. Our transport re-frames."""
    srv = RawServer()
    try:
        srv.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        srv.notify("initialized", {})
        uri = uri_of(tmp_path / "frames.ss")
        _open_raw(srv, uri)
        # overstated by 40 bytes, and nothing after it: the client waits for the answer
        srv.write(_hover_frame(10, uri, +40))
        assert "x: [b D] f32" in _hover_text(srv.answer(10, timeout=15))
        # a lowercase header name
        srv.write(_hover_frame(11, uri, name=b"content-length"))
        assert "x: [b D] f32" in _hover_text(srv.answer(11, timeout=15))
        # overstated by a megabyte, the next request right behind it in one write
        srv.write(_hover_frame(12, uri, +10 ** 6) + _hover_frame(13, uri))
        assert "x: [b D] f32" in _hover_text(srv.answer(13, timeout=15))
        assert "x: [b D] f32" in _hover_text(srv.answer(12, timeout=15))
        # overstated by less than the next header: it ends inside that header
        srv.write(_hover_frame(14, uri, +5) + _hover_frame(15, uri))
        assert "x: [b D] f32" in _hover_text(srv.answer(14, timeout=15))
        assert "x: [b D] f32" in _hover_text(srv.answer(15, timeout=15))
        # understated: the JSON says where it ends
        srv.write(_hover_frame(16, uri, -7) + _hover_frame(17, uri))
        assert "x: [b D] f32" in _hover_text(srv.answer(16, timeout=15))
        assert "x: [b D] f32" in _hover_text(srv.answer(17, timeout=15))
        # and every later request is answered, by the ordinary client
        other = uri_of(tmp_path / "later.ss")
        _open_raw(srv, other, TEXT.replace("x", "y"))
        later = srv.request("textDocument/hover", {"textDocument": {"uri": other},
                                                   "position": {"line": 3, "character": 11}}, timeout=15)
        assert "y: [b D] f32" in _hover_text(later)
    finally:
        srv.close()
    assert srv.proc.returncode == 0


def _diag(data, source="shapescript") -> dict:
    return {"range": {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 12}},
            "message": "m", "code": "E3306", "source": source, "data": data}


def test_malformed_arguments_answer_invalid_params(tmp_path):
    srv = RawServer()
    try:
        srv.request("initialize", {"processId": None, "rootUri": uri_of(tmp_path), "capabilities": {}})
        srv.notify("initialized", {})
        uri = uri_of(tmp_path / "args.ss")
        _open_raw(srv, uri)
        rng = {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 12}}

        def code_action(data, source="shapescript"):
            return srv.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": rng,
                "context": {"diagnostics": [_diag(data, source)]}}, timeout=15)

        good_edit = {"range": rng, "newText": "y"}
        for data in ({"fixes": "x"},
                     {"fixes": [1]},
                     {"fixes": [{"title": "t", "edits": {uri: "x"}}]},
                     {"fixes": [{"title": "t", "edits": {uri: [{"range": {"start": {"line": "a", "character": 0},
                                                                          "end": {"line": 0, "character": 0}},
                                                                "newText": "y"}]}}]},
                     {"fixes": [{"title": "t", "edits": {uri: [{"range": rng}]}}]},
                     {"fixes": [{"title": "t", "edits": {uri: [good_edit]}, "versions": {uri: "v"}}]}):
            answer = code_action(data)
            assert answer.get("error", {}).get("code") == -32602, (data, answer)
            assert "data.fixes" in answer["error"]["message"]
        # a well-formed fix comes back as its action; another server's data is not ours to read
        (action,) = code_action({"fixes": [{"title": "t", "applicability": "safe", "edits": {uri: [good_edit]},
                                            "versions": {uri: 1}}]})["result"]
        assert action["title"] == "t" and action["edit"]["changes"][uri][0]["newText"] == "y"
        assert "error" not in code_action({"fixes": "theirs"}, source="other-linter")

        def export(**args):
            return srv.request("workspace/executeCommand", {
                "command": "shapescript.export", "arguments": [{"uri": uri, "target": "hf", **args}]}, timeout=15)

        for args in ({"seed": "x"}, {"seed": True}, {"position": {"line": "a", "character": 0}},
                     {"position": {"line": 0}}, {"position": "start"}, {"dims": {"D": "4"}}, {"force": "yes"}):
            answer = export(**args)
            assert answer.get("error", {}).get("code") == -32602, (args, answer)
        # the server goes on
        ok = srv.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 3, "character": 11}})
        assert "x: [b D] f32" in _hover_text(ok)
    finally:
        srv.close()


def test_a_change_whose_version_goes_backwards_is_ignored_with_a_warning(tmp_path):
    srv = RawServer()
    try:
        srv.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        srv.notify("initialized", {})
        uri = uri_of(tmp_path / "versions.ss")
        _open_raw(srv, uri, version=5)

        def change(version, text):
            srv.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                  "contentChanges": [{"text": text}]})

        change(6, TEXT.replace("x", "y"))
        change(4, TEXT.replace("x", "z"))  # backwards: ignored
        change(6, TEXT.replace("x", "w"))  # the same version again: ignored
        hover = srv.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                   "position": {"line": 3, "character": 11}})
        assert "y: [b D] f32" in _hover_text(hover)
        warnings = [n["params"]["message"] for n in srv.notifications if n["method"] == "window/logMessage"
                    and n["params"]["type"] == 2]
        assert len(warnings) == 2, warnings
        assert "at version 4: the document is at version 6" in warnings[0]
        assert "at version 6: the document is at version 6" in warnings[1]
        change(7, TEXT.replace("x", "v"))  # forwards again: applied
        hover = srv.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                   "position": {"line": 3, "character": 11}})
        assert "v: [b D] f32" in _hover_text(hover)
    finally:
        srv.close()


def test_only_server_imports_the_protocol_libraries():
    """Architecture invariant: shapescript_core never imports pygls or lsprotocol."""
    core = os.path.join(ROOT, "shapescript_core")
    offenders = []
    for folder, _, names in os.walk(core):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                mods = []
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    mods = [node.module]
                offenders += [f"{os.path.relpath(path, ROOT)}: {m}" for m in mods
                              if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs")]
    assert offenders == []
    # and importing the core pulls neither in
    import subprocess
    import sys
    code = ("import sys, shapescript_core.workspace, shapescript_core.ide.hover, shapescript_core.ide.completion, "
            "shapescript_core.ide.navigation, shapescript_core.ide.inlay, shapescript_core.ide.lens, "
            "shapescript_core.ide.semantic_tokens, shapescript_core.settings, shapescript_core.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def _plain_encoding(ws, path):
    """LSP's encoding of the core's absolute tokens, token by token."""
    from shapescript_core.ide import semantic_tokens as tokens
    lines = ws.file(path).lines
    data, pl, pc = [], 0, 0
    for t in tokens.semantic_tokens(ws, path):
        (l, c), (el, ec) = lines.utf16_position(t.start), lines.utf16_position(t.end)
        if el == l:
            data += [l - pl, c - pc if l == pl else c, ec - c, tokens.TYPES.index(t.type),
                     sum(1 << tokens.MODIFIERS.index(m) for m in t.modifiers)]
            pl, pc = l, c
    return data


def test_semantic_tokens_stitched_from_cached_items_equal_a_plain_encoding():
    from shapescript_server.semantic_tokens import encode
    ls = ShapeScriptServer()
    ls.token_cache = {}
    path = "/tmp/tokens/u.ss"
    text = ("# 😀 注意\ndim D = 4  # 𝔸\n\nmodel M:\n    w: [D D]\n\n# doc 😀\n"
            "fn f(m: M, x: [b D]) -> [b D]:\n    y = linear(x, m.w)  # é\n    return y\n\n"
            "fn g(x: [b D]) -> [b D]:\n    return f(x)\n")
    ls.ws.set_text(path, text, 1)
    assert list(encode(ls, path).data) == _plain_encoding(ls.ws, path)
    first = dict(ls.token_cache[path])
    ls.ws.set_text(path, text.replace("return f(x)", "return f(x) + x"), 2)
    assert list(encode(ls, path).data) == _plain_encoding(ls.ws, path)
    reused = set(first) & set(ls.token_cache[path])
    assert len(reused) >= 3  # the unchanged items kept their encoding


def test_tcp_for_debugging():
    import json
    import socket
    import subprocess
    import sys
    import time
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "shapescript_server.main", "--tcp", f"127.0.0.1:{port}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 15
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        with conn:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None, "capabilities": {}}}).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            f = conn.makefile("rb")
            length = 0
            while (line := f.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reply = json.loads(f.read(length))
        assert reply["result"]["serverInfo"]["name"] == "shapescript-lsp"
        assert reply["result"]["capabilities"]["positionEncoding"] == "utf-16"
    finally:
        proc.kill()
        proc.wait()


def _server_imports() -> dict:
    """module -> the server modules it imports at run time (anywhere in it, functions
    included; not under `if TYPE_CHECKING:`)."""
    folder = os.path.join(ROOT, "shapescript_server")
    names = {n[:-3] for n in os.listdir(folder) if n.endswith(".py")}
    graph = {}
    for name in sorted(names):
        with open(os.path.join(folder, name + ".py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1 and node.module:
                deps.add(node.module.split(".")[0])
            elif node.level == 1:
                deps.update(a.name for a in node.names)
            elif node.module and node.module.startswith("shapescript_server."):
                deps.add(node.module.split(".")[1])
        graph[name] = sorted(deps & names - {name})
    return graph


def test_the_server_modules_import_each_other_without_a_cycle():
    graph = _server_imports()
    assert "app" in graph["features"] and "hover" in graph["features"]  # the graph is read
    state: dict = {}
    cycles = []

    def visit(m, path):
        state[m] = "open"
        for d in graph[m]:
            if state.get(d) == "open":
                cycles.append(path[path.index(d):] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [m])
    assert cycles == []
    assert graph["app"] == ["documents", "initialize_answer", "roots"]  # the server object knows no feature


# ---------------------------------------------------------------- framing (shapescript_server/transport.py)
_TEXT = st.lists(st.sampled_from(list("ab {}[]:,\"\\\r\n\té😀") + ["Content-Length: 12\r\n\r\n"]),
                 max_size=20).map("".join)
_MESSAGE = st.builds(lambda k, t: {"jsonrpc": "2.0", "id": k, "method": "m", "params": {"text": t, "n": [k]}},
                     st.integers(0, 10 ** 6), _TEXT)


def _frame(msg: dict, delta: int = 0, name: bytes = b"Content-Length") -> bytes:
    body = json.dumps(msg, ensure_ascii=False).encode()
    return name + b": %d\r\n\r\n" % max(len(body) + delta, 1) + body


def _feed(stream: bytes, cuts: list) -> list:
    framer = Framer()
    out, last = [], 0
    for cut in sorted(set(c % (len(stream) + 1) for c in cuts)) + [len(stream)]:
        out += framer.feed(stream[last:cut])
        last = cut
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(_MESSAGE, min_size=1, max_size=5), st.lists(st.integers(0, 10 ** 6), max_size=8),
       st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-LENGTH"]))
def test_the_framer_reads_every_message_however_the_bytes_arrive(messages, cuts, name):
    stream = b"".join(_frame(m, name=name) for m in messages)
    assert _feed(stream, cuts) == messages


@settings(max_examples=150, deadline=None)
@given(_MESSAGE, st.integers(-30, 10 ** 6).filter(lambda d: d != 0), st.lists(_MESSAGE, min_size=1, max_size=3),
       st.lists(st.integers(0, 10 ** 6), max_size=8), st.booleans())
def test_a_wrong_length_loses_at_most_its_own_message(bad, delta, after, cuts, junk):
    stream = _frame(bad, delta) + (b"junk without a header\r\n" if junk else b"") + b"".join(_frame(m) for m in after)
    out = _feed(stream, cuts)
    assert out[-len(after):] == after  # every later message arrives whole
    first = out[:-len(after)]
    if delta > 0:  # overstated: the message itself is read too
        assert first == [bad]
    else:  # understated: read whole when the rest had arrived, else a parse error answer
        assert len(first) <= 2 and all(m == bad or isinstance(m, ParseError) for m in first)


def test_large_files_opened_together_are_each_checked_and_trimmed_before_the_next_parse(tmp_path, monkeypatch):
    """A batch of large files opened cold (a restored session): each is parsed, has its
    syntax errors published, is checked and published before the next one is parsed, and
    the one checked before it is trimmed before its check: at most two files are held
    whole at a time, not all of them (the peak memory of the open is what stays resident)."""
    monkeypatch.setattr(first_publish, "EARLY_ITEMS", 2)  # these files count as large
    from test_workspace_reuse import TEXTS
    texts = TEXTS[:3] + [TEXTS[3].replace("mid(x) + x", "mid(x) + nowhere")]
    ls = make_server()
    ls.ws.use_parse_cache(False)  # no loop to time the save with
    uris = []
    for k, text in enumerate(texts):
        path = tmp_path / f"f{k}.ss"
        path.write_text(text, encoding="utf-8")
        uris.append(uri_of(str(path)))
    events = []
    set_text, analyze = ls.ws.set_text, ls.ws.analyze

    def whole_others(path):  # the other files parsed so far holding a function body
        return sorted(os.path.basename(p) for p, f in ls.ws.files.items() if p != path and any(
            it.kind == "fn" and it.body_loaded for it in f.items))

    def parse(path, *args, **kw):
        events.append(("parse", os.path.basename(path), whole_others(ls.ws.norm(path))))
        return set_text(path, *args, **kw)

    def check(path, *args, **kw):
        events.append(("check", os.path.basename(path), whole_others(ls.ws.norm(path))))
        return analyze(path, *args, **kw)

    monkeypatch.setattr(ls.ws, "set_text", parse)
    monkeypatch.setattr(ls.ws, "analyze", check)
    for uri, text in zip(uris, texts):
        ls.docs.open(uri, text, 1)
        D.schedule_check(ls, uri)
    jobs, ls.jobs = ls.jobs[:len(texts)], ls.jobs[len(texts):]  # the open's own jobs
    for job in jobs:
        job()
    parses = [e for e in events if e[0] == "parse"]
    assert [e[2] for e in parses] == [[], ["f0.ss"], ["f1.ss"], ["f2.ss"]]  # the one before only
    firsts = [next(i for i, e in enumerate(events) if e[0] == "check" and e[1] == f"f{k}.ss")
              for k in range(len(texts))]
    starts = [events.index(e) for e in parses]
    assert all(starts[k] < firsts[k] < (starts + [len(events)])[k + 1] for k in range(len(texts)))
    assert [events[i][2] for i in firsts] == [[]] * len(texts)  # the one before trimmed by its check
    run(ls.later)
    run(ls.jobs)  # the dependents' republish: nothing changed
    run(ls.later)
    mine = [(p.uri, [str(d.code) for d in p.diagnostics]) for p in ls.sent]
    assert mine == [(u, codes) for u in uris for codes in ([], ["E0201"] if u == uris[-1] else [])]
