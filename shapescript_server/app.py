"""The server object: pygls's LanguageServer, the open documents, and the core's
Workspace, which lives on a thread of its own.

Scheduling. pygls reads and dispatches messages on an asyncio loop. Every handler asks
the core through `query` (requests) or `submit` (document changes), which run in order
on one "core" thread; the loop keeps reading meanwhile, so when a check finishes the
server already knows whether the client has moved on, and drops the result instead of
publishing it. A change's job captures its text and version, so later jobs see the
workspace exactly as the client had it when it sent them.

Robustness. Every handler is wrapped by `guarded` (guard.py): an exception is logged
(stderr and window/logMessage); a request gets an error answer, a notification is
dropped, and the server goes on. A request whose params don't even deserialize gets an
InvalidParams answer (pygls alone would drop it silently and leave the client waiting).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import traceback
import weakref
from typing import Any, Callable, Optional

from lsprotocol import types as T
from pygls.capabilities import get_capability
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from shapescript_core.files import Access
from shapescript_core.settings import Config
from shapescript_core.syntax.source import LineIndex
from shapescript_core.workspace import Workspace

from . import initialize_answer
from .documents import UNTITLED, Documents, path_of
from .roots import reading_access

log = logging.getLogger("shapescript.server")


class _ExpectedAnswers(logging.Filter):
    """pygls logs every error answer to a request as an exception, with its traceback.
    ContentModified is the expected answer to a request about a version the client has
    moved past (see `sync`), not a failure: it is logged by `sync`, at debug level."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcContentModified)


logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedAnswers())
VERSION = "0.1.0"


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: a valid request the server can't carry out (a file it won't read)."""
    CODE = -32803
    MESSAGE = "Request failed"


class _Malformed:
    """A request whose params did not deserialize: answered with InvalidParams."""

    def __init__(self, msg_id, method, error: Exception):
        self.id = msg_id
        self.method = method
        self.error = error


class Protocol(LanguageServerProtocol):
    """pygls's protocol, with three changes: positions are always UTF-16; text sync is
    the server's own (`Documents`), so pygls keeps no second copy; malformed requests
    are answered instead of dropped."""

    # id -> method of the requests fast_start.py answered: not answered again (serve_io
    # gives each server its own; this empty one is only read)
    answered_early: dict = {}

    @lsp_method(T.INITIALIZE)
    def lsp_initialize(self, params: T.InitializeParams):
        if params.capabilities.general is not None:
            params.capabilities.general.position_encodings = None  # UTF-16, as LSP requires
        result = yield from super().lsp_initialize(params)
        self._server.adjust_capabilities(result.capabilities)
        raw = self._server.raw_initialize
        if raw is not None and T.INITIALIZE in self.answered_early.values():
            answer = self._converter.unstructure(result)
            sent = initialize_answer.shipped(raw)
            if sent != answer:  # never: initialize_answer.py's variants hold all it depends on
                log.error("the shipped answer to initialize differs from the server's own: sent %s, made %s",
                          json.dumps(sent, sort_keys=True), json.dumps(answer, sort_keys=True))
        return result

    def _send_response(self, msg_id, result=None, error=None):
        method = self.answered_early.pop(msg_id, None) if isinstance(msg_id, (int, str)) else None
        if method is not None:
            if error is not None:
                log.error("%s, answered early, failed here: %s", method, error)
            return
        super()._send_response(msg_id, result, error)

    @lsp_method(T.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (h := self.fm.features.get(T.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield h, (params,), None

    @lsp_method(T.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (h := self.fm.features.get(T.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield h, (params,), None

    @lsp_method(T.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (h := self.fm.features.get(T.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield h, (params,), None

    @lsp_method(T.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: T.ExecuteCommandParams):
        """Commands get the whole params (their work-done token included)."""
        handler = self._server.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams(f"no command `{params.command}`")
        result = yield handler, (params,), None
        return result

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                return _Malformed(data["id"], data.get("method"), exc)
            raise

    def handle_message(self, message):
        if self._shutdown and getattr(message, "method", None) not in (None, T.EXIT) and \
                getattr(message, "id", None) is not None:
            # after `shutdown`, a request is an error (LSP: InvalidRequest); pygls would not answer
            log.warning("%s (request %s) after shutdown", message.method, message.id)
            self._send_response(message.id, None, JsonRpcInvalidRequest(
                f"{message.method} after shutdown: the server only takes `exit` now").to_response_error())
            return
        if isinstance(message, _Malformed):
            log.warning("invalid params for %s (request %s)", message.method, message.id)
            err = JsonRpcInvalidParams(f"invalid params for {message.method}")
            self._send_response(message.id, None, err.to_response_error())
            return
        super().handle_message(message)


def warm_up():
    """On the core thread, at start: what the first check would otherwise pay for on the
    way to the first diagnostics (about 150 ms): the parser's tables, which each thread
    builds for itself, and the export checks' modules, imported on first use."""
    ws = Workspace()
    ws.set_text("/__shapescript_warm_up__.ss", "dim D = 1\n\nfn f(x: [D]) -> [D]:\n    return x\n")
    ws.diagnostics("/__shapescript_warm_up__.ss")


class ShapeScriptServer(LanguageServer):
    def __init__(self):
        super().__init__("shapescript-lsp", VERSION, protocol_cls=Protocol,
                         text_document_sync_kind=T.TextDocumentSyncKind.Incremental)
        self.docs = Documents()
        self.ws = Workspace()
        self.ws.use_parse_cache()  # a large file opened again skips its parse (parse_cache.py)
        self.core = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="shapescript-core")
        self._in_flight: set = set()  # the core's jobs submitted and not finished
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.root: Optional[str] = None
        self.roots: list = []  # the workspace folders the client opened (paths); the reading boundary
        self.config = Config()
        self.push = True  # publish diagnostics; else the client pulls them
        self.generation = 0  # bumped by every change that can change any diagnostic
        self.published: dict = {}  # uri -> (version, items as JSON) last published
        self.replayed: dict = {}  # uri -> the version whose kept diagnostics were shown at didOpen
        self.shown_early: dict = {}  # uri -> (version, items) fast_start.py published before the server ran
        self.pulled_early: dict = {}  # uri -> (version, items) fast_start.py answered a pull with
        self.first_lines_early: dict = {}  # uri -> version whose first syntax errors fast_start.py published
        self.checked_early: set = set()  # uris of shown_early whose diagnostics fast_start.py's check made
        self.kept_pull: dict = {}  # uri -> [version, kept items, answered(, "early": an edit's, any pull)]: a pulling client's first answer
        self.pull_waiters: dict = {}  # (uri, version) -> futures of pulls waiting: an early list answers them
        self.keep_timers: dict = {}  # uri -> the pending write of its diagnostics to disk
        # SourceFile -> (text, its hash): the texts of the imports a publish was made from
        self.digests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # paths whose diagnostics may have changed with another file's edit, republished
        # in the background after the edited document's own (diagnostics.py)
        self.pending: dict = {}
        self.published_from: dict = {}  # path -> the Analysis its last publish was made from
        self.init_options: dict = {}
        self.raw_initialize = None  # the initialize params as the client sent them (JSON): fast_start.py's key
        self.client_settings = None  # the editor's `shapescript` settings
        self.commands: dict = {}  # name -> async fn(ExecuteCommandParams)
        self.export_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                                 thread_name_prefix="shapescript-export")
        self._access_sent = None
        self.update_access()  # nothing may be read until the client names its folders
        self.submit("warm-up", warm_up)  # while the client initializes, not in its first check

    # ------------------------------------------------------------ capabilities
    def client_supports(self, dotted: str, default=False) -> Any:
        """A client capability by its dotted path (snake_case), or `default`."""
        try:
            return get_capability(self.client_capabilities, dotted, default)
        except Exception:
            return default

    def adjust_capabilities(self, caps: T.ServerCapabilities):
        """After pygls built the capabilities: push or pull diagnostics
        (initialize_answer.diagnostic_push); a client that gets pushes is not told about
        pull, so it doesn't show every diagnostic twice."""
        self.push = initialize_answer.diagnostic_push(
            (self.init_options or {}).get("diagnosticMode", "auto"),
            self.client_supports("text_document.diagnostic", None) is not None,
            bool(self.client_supports("workspace.diagnostics.refresh_support", False)))
        if self.push:
            caps.diagnostic_provider = None
        caps.position_encoding = T.PositionEncodingKind.Utf16
        if self.commands:
            caps.execute_command_provider = T.ExecuteCommandOptions(commands=sorted(self.commands))

    @property
    def markdown(self) -> bool:
        """Whether the client shows Markdown hovers (else plain text, as LSP defaults)."""
        fmts = self.client_supports("text_document.hover.content_format", None) or []
        return T.MarkupKind.Markdown in fmts

    # ------------------------------------------------------------ the core thread
    async def query(self, fn: Callable[[], Any]):
        """Run `fn` on the core thread, after every change received before it."""
        return await asyncio.wrap_future(self._track(self.core.submit(fn)))

    def _track(self, future: concurrent.futures.Future) -> concurrent.futures.Future:
        self._in_flight.add(future)
        future.add_done_callback(self._in_flight.discard)
        return future

    def core_busy(self) -> bool:
        """Whether the core thread has work queued or under way (work that can wait, such
        as keeping parsed items on disk, waits for it)."""
        return bool(self._in_flight)

    def submit(self, name: str, fn: Callable[[], Any]):
        """Run `fn` on the core thread, for its effects; failures are logged."""
        def job():
            try:
                fn()
            except Exception as exc:
                if self.loop is None:  # not serving yet (the warm-up): stderr only
                    log.error("%s failed", name, exc_info=exc)
                else:
                    self.call_soon(self.report_failure, name, exc)
        return self._track(self.core.submit(job))

    def call_soon(self, fn, *args):
        """Run `fn` on the event loop (from the core thread)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is shutting down
            pass

    def report_failure(self, name: str, exc: BaseException):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        log.error("%s failed:\n%s", name, text)
        try:
            self.window_log_message(T.LogMessageParams(type=T.MessageType.Error,
                                                       message=f"shapescript: {name} failed: {exc!r}\n{text}"))
        except Exception:  # the transport may be gone
            pass

    # ------------------------------------------------------------ helpers for handlers
    def to_json(self, value):
        """LSP values as the JSON they are sent as (pygls's converter)."""
        return self.protocol._converter.unstructure(value)

    def publish_json(self, params: dict):
        """publishDiagnostics with its params already JSON (converted on the core thread)."""
        self.protocol._send_data({"jsonrpc": "2.0", "method": T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": params})

    def lines_for(self, path: str) -> LineIndex:
        f = self.ws.file(path)
        return f.lines if f is not None else LineIndex("")

    def snapshot(self, uri: str):
        """(path, text, version) of an open document, or (path, None, None)."""
        d = self.docs.get(uri)
        if d is None:
            return path_of(uri), None, None
        return d.path, d.text, d.version

    def sync(self, path: str, text: Optional[str], version) -> bool:
        """On the core thread: make sure the workspace holds this text (the request's
        snapshot; change jobs run in order, this is the safety net). False when the file
        can't be read. A request about a version the client has moved past is answered
        ContentModified, as LSP provides, instead of checking a text nobody shows any
        more: its positions are about that text, and the client asks again."""
        if text is not None:
            uri = self.docs.uri_by_path.get(path)
            if uri is not None and self.docs.version(uri) != version:
                log.debug("a request about %s version %s: the client is at %s", uri, version,
                          self.docs.version(uri))
                raise JsonRpcContentModified(f"{uri} changed (version {version} is gone)")
            f = self.ws.files.get(path)
            if f is None or f.version != version or f.text != text:
                self.ws.set_text(path, text, version)
            return True
        if path.startswith(UNTITLED + os.sep):
            return False  # a made-up path: nothing on disk to read
        if self.ws.file(path) is not None:
            return True
        why = self.ws.refusal(path)
        if why is not None and why.kind != "missing":
            raise RequestFailed(f"E0214: can't read `{path}`: {why.reason}")
        return False

    def access(self) -> Access:
        """What the server may read: files inside the workspace folders the client opened
        (or, with none, the folders of the open documents), at most `max_file_size` each."""
        return reading_access(self.roots, [d.path for d in self.docs if not d.path.startswith(UNTITLED)],
                              self.config.max_file_size)

    def update_access(self):
        """After the folders, the open documents or the settings changed: the core's
        workspace reads with the new boundary from its next job on."""
        access = self.access()
        if access == self._access_sent:
            return
        self._access_sent = access
        self.submit("reading boundary", lambda: self.ws.set_access(access))

    def show(self, message: str, kind: T.MessageType = T.MessageType.Info):
        self.window_show_message(T.ShowMessageParams(type=kind, message=message))

    def shutdown_core(self):
        self.core.shutdown(wait=False, cancel_futures=True)
        self.export_pool.shutdown(wait=False, cancel_futures=True)
