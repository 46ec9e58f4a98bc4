"""The first messages of a session, answered before pygls is loaded.

Loading pygls costs most of the server's start: lsprotocol's types alone are about
0.4 s of CPU, more than everything else before the first diagnostics. So `run` reads
stdin first, with nothing of pygls but `pygls.uris` loaded:

- `initialize`: answered with the answer shipped with the server for this kind of
  client (initialize_answer.py); a client it has none for is answered by the server;
- `initialized` and other notifications (a configuration change): kept for the server;
- the first `didOpen`: the diagnostics kept for that very text, settings and imports
  (diagnostics_cache.py), or with none kept, a large file's syntax errors in the lines
  an editor shows first (first_publish.py), are published at once when the server
  pushes diagnostics; for a client that pulls them (VS Code), they answer its first
  pull of that document if it comes within WAIT_FOR_PULL seconds;
- a pushing client's first didOpen of a large file with nothing kept, and the didOpens
  that follow it (a restored session opens its documents in a burst: each large one's
  first lines published as it comes): once none has come for BURST_QUIET seconds, the
  last one opened (the one an editor shows) is checked here, in a workspace set up as
  the server's will be, and its complete diagnostics are published before pygls is
  loaded (`_check_last`); the server takes that workspace over.

Then, or at any other message, or WAIT_FOR_OPEN seconds after initialize without a
didOpen, it stops and hands what it read to the server (`Early`), which loads pygls
and handles every message in order: what was answered already is not answered again
(app.Protocol), kept diagnostics already shown are recorded, not sent again
(diagnostics.show_kept); the syntax errors of the first lines are followed by the
server's publishes of the whole file, and a pull answered with anything else than the
check finds is followed by a refresh, so the client pulls again
(diagnostics.hold_kept). A failure here is logged and the server answers everything
itself.
"""
from __future__ import annotations

import json
import logging
import os
import select
import sys
import threading
import time
from typing import Callable, Optional

from pygls import uris

from shapescript_core.settings import load_config, parse_settings

from . import diagnostics_cache, initialize_answer
from .check_slice import AfterEarly
from .document_text import Document
from .framing import Framer
from .roots import file_path, reading_access, root_from, roots_from

log = logging.getLogger("shapescript.server")

WAIT_FOR_OPEN = 1.0  # seconds after the early answer to wait for the first didOpen
WAIT_FOR_PULL = 0.25  # seconds after a pulling client's first didOpen to wait for its pull
BURST_QUIET = 0.05  # seconds with no message after a didOpen: the documents opened together are all in
BURST_MOST = 1.0  # seconds after the first of them, at most


class Early:
    """What `run` did: the messages it read (all of them, for the server, in order),
    its framer (holding the start of the next one), the id of the initialize it
    answered, the kept diagnostics it published (uri -> (version, items)) or the first
    lines' syntax errors (uri -> version), and for a client that pulls, the id of the
    pull it answered and what with (uri -> (version, items))."""

    def __init__(self):
        self.framer = Framer()
        self.messages: list = []
        self.answered = None
        self.shown: dict = {}
        self.pull_answered = None
        self.pulled: dict = {}
        self.first_lines: dict = {}  # uri -> version: the first lines' syntax errors published
        self.checked: set = set()  # the uris in `shown` whose diagnostics its own check made (not kept)
        self.workspace = None  # the Workspace that check ran in, for the server to take over


def stdout_writer(stream=None) -> Callable[[dict], None]:
    """Writes one message, framed as the server frames its own."""
    out = stream or sys.stdout.buffer

    def write(msg: dict):
        body = json.dumps(msg).encode("utf-8")
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()
    return write


def run(fd: int = 0, write: Optional[Callable[[dict], None]] = None) -> Early:
    """Read and answer the first messages from `fd` (see the module's docstring)."""
    early = Early()
    try:
        _run(early, fd, write or stdout_writer())
    except Exception:
        log.exception("the fast start failed: the server answers what it read")
    return early


def _run(early: Early, fd: int, write: Callable[[dict], None]):
    deadline = None  # after the early answer: how long to wait for a didOpen (then a pull)
    init: dict = {}
    pushes = False
    opened = None  # a pulling client's first document: (uri, version, items) for its pull
    burst: list = []  # a pushing client's documents opened one after the other: (uri, path, text, version)
    most = None  # when the burst is checked at the latest
    while True:
        if deadline is not None:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                if burst:
                    _check_last(early, init, burst, write, fd)
                return
        data = os.read(fd, 1 << 16)
        if not data:
            return  # the end of input: the server sees it too
        messages = early.framer.feed(data)
        early.messages += messages  # every one goes to the server, those after a stop too
        for msg in messages:
            if not isinstance(msg, dict):
                return
            method = msg.get("method")
            if early.answered is None:
                msg_id = msg.get("id")
                if method != "initialize" or not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                    return
                answer = initialize_answer.shipped(msg.get("params"))
                if answer is None:
                    return
                write({"jsonrpc": "2.0", "id": msg["id"], "result": answer})
                early.answered = msg["id"]
                init = msg["params"] if isinstance(msg.get("params"), dict) else {}
                deadline = time.monotonic() + WAIT_FOR_OPEN
                pushes = "diagnosticProvider" not in answer["capabilities"]
            elif opened is not None:
                if method == "textDocument/diagnostic" and _first_pull(msg, opened[0]):
                    uri, version, items = opened
                    write({"jsonrpc": "2.0", "id": msg["id"],
                           "result": {"kind": "full", "resultId": f"early-{version}", "items": items}})
                    early.pull_answered = msg["id"]
                    early.pulled[uri] = (version, items)
                return  # anything else, after a pulling client's didOpen: the server's
            elif "id" in msg or not isinstance(method, str) or method == "exit":
                return  # a request (or an answer, or exit): the server's
            elif method == "textDocument/didOpen":
                doc = _document(msg.get("params"))
                if doc is None:
                    return
                first = _first_items(init, doc)
                if first is None and not burst:
                    return
                if first is not None:
                    uri, version, items, kept = first
                    if not pushes:
                        opened = (uri, version, items)
                        deadline = time.monotonic() + WAIT_FOR_PULL
                        continue
                    write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                           "params": {"uri": uri, "version": version, "diagnostics": items}})
                    if kept:
                        early.shown[uri] = (version, items)
                    else:
                        early.first_lines[uri] = version
                    if kept and not burst:
                        return  # its complete diagnostics, kept: nothing to check before the server
                # a large document opened cold, and those opened right after it: the last one
                # is checked here once none has come for BURST_QUIET seconds (_check_last)
                burst.append(Opened(*doc))
                now = time.monotonic()
                most = most or now + BURST_MOST
                deadline = min(now + BURST_QUIET, most)
            elif burst and method == "textDocument/didChange" and _typed(msg, burst):
                # typed at once in a document of the burst: checked now (a keystroke that comes
                # during the check is read between two function bodies: _check_last)
                deadline = time.monotonic()
            elif burst:
                return  # anything else after them (a configuration change): the server's
            # another notification (initialized, a configuration change): kept for the server


_preloading: list = []  # the thread loading the server, once started


def _preload():
    """The server's modules (pygls, lsprotocol: about half a second of CPU), loaded on a
    thread of their own once a change typed while fast_start checks was published: the
    check goes on meanwhile (sharing the interpreter), and the request that ends
    fast_start's turn (a hover) doesn't wait for that load. Not started when nobody
    types: a cold open's check then runs alone."""
    if _preloading:
        return

    def load():
        try:
            from . import features, transport  # noqa: F401 - deferred: pygls, loaded ahead for main.py's import
        except Exception:
            log.exception("loading the server ahead failed: main.py loads it, and says why")
    t = threading.Thread(target=load, name="shapescript-preload", daemon=True)
    _preloading.append(t)
    t.start()


class Opened:
    """A document of a burst: its text as opened (`first`) and as typed since (`doc`)."""

    def __init__(self, uri: str, path: str, text: str, version):
        self.uri, self.path, self.first = uri, path, text
        self.doc = Document(uri, path, text, version)
        self.typed = False  # a change was applied


def _typed(msg: dict, burst: list) -> bool:
    """A didChange of a document of the burst, applied to its text: True; False (nothing
    applied) when it is anything else, or its changes are not what LSP says."""
    params = msg.get("params")
    td = params.get("textDocument") if isinstance(params, dict) else None
    changes = params.get("contentChanges") if isinstance(params, dict) else None
    if not isinstance(td, dict) or type(td.get("version")) is not int or not isinstance(changes, list):
        return False
    opened = next((o for o in burst if o.uri == td.get("uri")), None)
    if opened is None:
        return False
    parsed = []
    for ch in changes:
        rng = ch.get("range") if isinstance(ch, dict) else None
        if not isinstance(ch, dict) or not isinstance(ch.get("text"), str):
            return False
        if rng is None:
            parsed.append((None, ch["text"]))
            continue
        try:
            a, b = rng["start"], rng["end"]
            at = (a["line"], a["character"], b["line"], b["character"])
        except (KeyError, TypeError):
            return False
        if not all(type(x) is int and x >= 0 for x in at):
            return False
        parsed.append((at, ch["text"]))
    for at, text in parsed:
        opened.doc.apply(at, text)
    opened.doc.version = td["version"]
    opened.typed = True
    return True


def _first_pull(msg: dict, uri: str) -> bool:
    """A pull of the diagnostics of `uri` that has none yet (LSP's textDocument/diagnostic)."""
    msg_id, params = msg.get("id"), msg.get("params")
    td = params.get("textDocument") if isinstance(params, dict) else None
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) and isinstance(td, dict) \
        and td.get("uri") == uri and params.get("previousResultId") is None


def _document(params):
    """(uri, path, text, version) of a didOpen's document, or None (not a file's)."""
    td = params.get("textDocument") if isinstance(params, dict) else None
    if not isinstance(td, dict):
        return None
    uri, text, version = td.get("uri"), td.get("text"), td.get("version")
    if not isinstance(uri, str) or not isinstance(text, str) or not (version is None or type(version) is int):
        return None
    path = file_path(uri)
    return None if path is None else (uri, path, text, version)


def _settings(init: dict, paths: list) -> tuple:
    """(config, roots, access) the server will have once it has read the initialize
    params, with the documents at `paths` open (settings.apply_config, app.access)."""
    folders = [f.get("uri") for f in init.get("workspaceFolders") or () if isinstance(f, dict)]
    roots = roots_from(folders, init.get("rootUri"), init.get("rootPath"))
    opts = init.get("initializationOptions")
    opts = opts if isinstance(opts, dict) else {}
    config = load_config(root_from(folders, init.get("rootUri"), init.get("rootPath"))).merged(
        parse_settings(opts.get("settings"), "settings"))
    return config, roots, reading_access(roots, paths, config.max_file_size)


def _first_items(init: dict, doc: tuple):
    """(uri, version, items, kept) for the document opened: the diagnostics kept for it,
    under the settings the server would have at this point (diagnostics.show_kept's rule,
    from the JSON); with none kept, a large file's syntax errors in its first lines
    (first_publish.py), kept False; None when there is nothing to show yet."""
    uri, path, text, version = doc
    config, roots, access = _settings(init, [path])
    items = diagnostics_cache.kept(path, text, diagnostics_cache.fingerprint(config, roots, access), {path: text},
                                   access, lambda u: version if u == uri else None)
    if items is not None:
        return uri, version, items, True
    from . import first_publish  # deferred: the parser (lark, ~0.15 s), not loaded to show kept diagnostics
    items = first_publish.visible_syntax(text, path, uri, version)
    # None: a small file, which the server checks before anyone could see the difference
    return None if items is None else (uri, version, items, False)


def _check_last(early: Early, init: dict, burst: list, write: Callable[[dict], None], fd: Optional[int] = None):
    """The documents opened one after the other, the first of them a large file opened
    cold: the last one (an editor opens the one it shows last) checked here, its complete
    diagnostics published before pygls is loaded (about half a second of CPU), as the
    server would check it: the same settings, the others read at interface depth
    (diagnostics._check_latest_opened). The server takes the workspace over, and does not
    publish those diagnostics again (`shown`, diagnostics.show_kept). One whose kept
    diagnostics were shown is not checked again.

    Typed in before or during this check (didChange, read from `fd` between two function
    bodies): the check goes on with the new text, the edited functions checked first and
    published before the rest (Analyzer._early), as the server does. Any other message
    stops it: the server, loaded then, checks the document."""
    last = burst[-1]
    uri, path = last.uri, last.path
    if uri in early.shown:
        return
    from shapescript_core.workspace import Cancelled, Workspace  # deferred: the checker, only for a burst
    from . import diagnostics_json  # deferred: the checker's findings as LSP's, with the checker
    config, roots, access = _settings(init, [o.path for o in burst])
    ws = Workspace(access=access)
    ws.use_parse_cache()
    ws.set_roots(roots)
    config.apply_to(ws)
    opened = {o.path: o for o in burst}
    versions = {o.uri: o.doc.version for o in burst}

    def publish(version, diags: list):
        items = diagnostics_json.diagnostics(
            diags, path, lambda p: ws.file(p).lines,
            lambda p: opened[p].uri if p in opened else (uris.from_fs_path(p) or "file://" + p), versions.get)
        write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
               "params": {"uri": uri, "version": version, "diagnostics": items}})
        return items

    typed = AfterEarly(lambda: fd is not None and bool(select.select([fd], [], [], 0)[0]))

    if last.typed:
        ws.set_text(path, last.first, None, interface=True)  # as opened: then the edit is one like any other
    # at interface depth (a third of the parse): the bodies are parsed as the check reads
    # them, a keystroke read between two of them
    ws.set_text(path, last.doc.text, last.doc.version, interface=True)
    ws.import_closure(path, {p: (o.doc.text, o.doc.version) for p, o in opened.items() if p != path})
    shown_early = None  # the version whose early list was published
    while True:
        version = last.doc.version
        versions[uri] = version
        early_publish = None if not last.typed or version == shown_early else \
            (lambda diags, v=version: (publish(v, diags), typed.published(), _preload()))
        shown_early = version if early_publish is not None else shown_early
        try:
            a = ws.analyze(path, cancelled=typed, early=early_publish)
            break
        except Cancelled:
            if not _read_typing(early, fd, burst):
                early.workspace = ws  # what was checked stays: the server's check reuses it
                return
            ws.set_text(path, last.doc.text, last.doc.version, interface=True)
    items = publish(version, a.diags if a else [])
    early.shown[uri] = (version, items)
    if early.first_lines.get(uri) == version:  # (else they stand for the version opened, as published)
        del early.first_lines[uri]
    early.checked.add(uri)
    early.workspace = ws


def _read_typing(early: Early, fd: int, burst: list) -> bool:
    """The messages waiting on `fd`, read (kept for the server): True when each is a
    didChange of a document of the burst (applied), False at any other."""
    data = os.read(fd, 1 << 16)
    if not data:
        return False
    messages = early.framer.feed(data)
    early.messages += messages
    return all(isinstance(m, dict) and m.get("method") == "textDocument/didChange" and "id" not in m
               and _typed(m, burst) for m in messages)
