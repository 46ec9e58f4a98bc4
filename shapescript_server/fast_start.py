"""The first messages of a session, answered before pygls is loaded.

Loading pygls costs most of the server's start: lsprotocol's types alone are about
0.4 s of CPU, more than everything else before the first diagnostics of a reopened
file. So `run` reads stdin first, with nothing of pygls but `pygls.uris` loaded:

- `initialize`: answered with the answer the server gave last time to the same
  client capabilities and initialization options, with the same code (kept on disk
  beside the parsed items, `save_answer`); with none kept, the server answers it;
- `initialized`: kept for the server;
- the first `didOpen`: the diagnostics kept for that very text, settings and imports
  (diagnostics_cache.py) are published at once, when the server pushes diagnostics.

Then, or at any other message, or WAIT_FOR_OPEN seconds after initialize without a
didOpen, it stops and hands what it read to the server (`Early`), which loads pygls
and handles every message in order: its own answer to the initialize already answered
is not sent again (app.Protocol), and the diagnostics already shown are recorded, not
sent again (diagnostics.show_kept). A failure here is logged and the server answers
everything itself.

A kept answer is JSON, read only from the private cache folder (parse_cache.private),
and used only under the key of this client's capabilities, options and this code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import select
import sys
import time
from typing import Callable, Optional

from shapescript_core.settings import load_config, parse_settings
from shapescript_core.syntax import parse_cache

from . import diagnostics_cache
from .framing import Framer
from .roots import file_path, reading_access, root_from, roots_from

log = logging.getLogger("shapescript.server")

FORMAT = 1
ANSWER_SUFFIX = ".init.json"
MAX_ANSWER_BYTES = 1 << 20
MAX_ANSWERS = 16  # kept answers (one per client set-up)
WAIT_FOR_OPEN = 1.0  # seconds after the early answer to wait for the first didOpen
_HERE = os.path.dirname(os.path.abspath(__file__))
_version: Optional[str] = None


class Early:
    """What `run` did: the messages it read (all of them, for the server, in order),
    its framer (holding the start of the next one), the id of the initialize it
    answered and the diagnostics it published (uri -> (version, items))."""

    def __init__(self):
        self.framer = Framer()
        self.messages: list = []
        self.answered = None
        self.shown: dict = {}


def server_version() -> str:
    """A hash of the checker's and the server's files (names, sizes, modification
    times) and of the installed pygls and lsprotocol: another server's answers are
    not given."""
    global _version
    if _version is None:
        h = hashlib.sha256(f"{FORMAT}\0{diagnostics_cache.checker_version()}\0".encode())
        paths = [os.path.join(_HERE, n) for n in sorted(os.listdir(_HERE)) if n.endswith(".py")]
        for mod in ("pygls", "lsprotocol"):
            spec = importlib.util.find_spec(mod)
            paths.append(spec.origin if spec is not None and spec.origin else mod)
        for p in paths:
            try:
                st = os.stat(p)
                h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode("utf-8", "surrogatepass"))
            except OSError:
                h.update(p.encode("utf-8", "surrogatepass"))
        _version = h.hexdigest()[:16]
    return _version


def answer_key(params) -> str:
    """What an initialize answer depends on: the client's capabilities and options."""
    p = params if isinstance(params, dict) else {}
    data = [server_version(), p.get("capabilities"), p.get("initializationOptions")]
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode("utf-8", "surrogatepass")).hexdigest()


def _answer_file(key: str) -> str:
    return os.path.join(parse_cache.cache_dir(), key[:32] + ANSWER_SUFFIX)


def load_answer(params) -> Optional[dict]:
    """The answer kept for an initialize with these params, or None."""
    key = answer_key(params)
    path = _answer_file(key)
    data = diagnostics_cache.read_json(path, MAX_ANSWER_BYTES, "initialize answer")
    if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("key") == key
            and isinstance(data.get("result"), dict) and isinstance(data["result"].get("capabilities"), dict)):
        log.debug("initialize answer %s is not this client's", path)
        return None
    return data["result"]


def save_answer(params, result: dict) -> bool:
    """Keep the server's answer to an initialize (JSON) for the next start; False
    (logged) when that can't be done."""
    key = answer_key(params)
    return diagnostics_cache.write_json(_answer_file(key), {"format": FORMAT, "key": key, "result": result},
                                        MAX_ANSWER_BYTES, (ANSWER_SUFFIX, MAX_ANSWERS), "initialize answer")


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
    deadline = None  # after the early answer: how long to wait for a didOpen
    init: dict = {}
    pushes = False
    while True:
        if deadline is not None:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
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
                if method != "initialize" or not isinstance(msg.get("id"), (int, str)) or isinstance(msg.get("id"), bool):
                    return
                answer = load_answer(msg.get("params"))
                if answer is None:
                    return
                write({"jsonrpc": "2.0", "id": msg["id"], "result": answer})
                early.answered = msg["id"]
                init = msg["params"] if isinstance(msg.get("params"), dict) else {}
                deadline = time.monotonic() + WAIT_FOR_OPEN
                pushes = "diagnosticProvider" not in answer["capabilities"]
            elif method == "initialized" and "id" not in msg:
                continue
            elif method == "textDocument/didOpen" and "id" not in msg:
                if pushes:
                    _show_kept(early, init, msg.get("params"), write)
                return
            else:
                return


def _show_kept(early: Early, init: dict, params, write: Callable[[dict], None]):
    """Publish the diagnostics kept for the document opened, under the settings the
    server would have at this point (diagnostics.show_kept's rule, from the JSON)."""
    td = params.get("textDocument") if isinstance(params, dict) else None
    if not isinstance(td, dict):
        return
    uri, text, version = td.get("uri"), td.get("text"), td.get("version")
    if not isinstance(uri, str) or not isinstance(text, str) or not (version is None or type(version) is int):
        return
    path = file_path(uri)
    if path is None:
        return
    folders = [f.get("uri") for f in init.get("workspaceFolders") or () if isinstance(f, dict)]
    roots = roots_from(folders, init.get("rootUri"), init.get("rootPath"))
    opts = init.get("initializationOptions")
    opts = opts if isinstance(opts, dict) else {}
    config = load_config(root_from(folders, init.get("rootUri"), init.get("rootPath"))).merged(
        parse_settings(opts.get("settings"), "settings"))
    access = reading_access(roots, [path], config.max_file_size)
    items = diagnostics_cache.kept(path, text, diagnostics_cache.fingerprint(config, roots, access), {path: text},
                                   access, lambda u: version if u == uri else None)
    if items is None:
        return
    write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
           "params": {"uri": uri, "version": version, "diagnostics": items}})
    early.shown[uri] = (version, items)
