"""Helpers for the end-to-end tests of the language server (pytest-lsp)."""
from __future__ import annotations

import asyncio
import os
import tempfile
import subprocess
import sys
from typing import Optional

from lsprotocol import types as T
from lsprotocol.converters import get_converter
from pygls import uris
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from shapescript_core.syntax.source import LineIndex
from shapescript_core.workspace import Workspace
from stdio_client import StdioClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = [sys.executable, "-m", "shapescript_server.main"]
CONVERTER = get_converter()


def _record_publish(client: LanguageClient, params: T.PublishDiagnosticsParams):
    client.diagnostics[params.uri] = params.diagnostics
    client.publishes.append(params)
    client.published.set()


def make_client() -> LanguageClient:
    """pytest-lsp's client, keeping every publish (not only the last per URI).

    Wait for publishes with `wait_until` / `wait_version`, not with pytest-lsp's
    `wait_for_notification` under a timeout: a cancelled wait there breaks the client."""
    client = LanguageClient(converter_factory=default_converter)
    client.publishes = []
    client.published = asyncio.Event()
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES,
                                   T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record_publish})
    return client


def config(command=None) -> ClientServerConfig:
    return ClientServerConfig(server_command=command or SERVER, client_factory=make_client,
                              server_env={**os.environ, "PYTHONPATH": ROOT})


def capabilities(pull: bool = False, **extra) -> T.ClientCapabilities:
    """A capable client: markdown, hierarchical symbols, versioned workspace edits,
    work-done progress, workspace configuration; pull diagnostics when asked."""
    return T.ClientCapabilities(
        text_document=T.TextDocumentClientCapabilities(
            hover=T.HoverClientCapabilities(content_format=[T.MarkupKind.Markdown, T.MarkupKind.PlainText]),
            document_symbol=T.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
            completion=T.CompletionClientCapabilities(completion_item=T.ClientCompletionItemOptions(
                documentation_format=[T.MarkupKind.Markdown])),
            signature_help=T.SignatureHelpClientCapabilities(
                signature_information=T.ClientSignatureInformationOptions(
                    documentation_format=[T.MarkupKind.Markdown],
                    parameter_information=T.ClientSignatureParameterInformationOptions(label_offset_support=True))),
            publish_diagnostics=T.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, code_description_support=True,
                data_support=True),
            diagnostic=T.DiagnosticClientCapabilities(related_document_support=False) if pull else None,
            rename=T.RenameClientCapabilities(prepare_support=True),
        ),
        workspace=T.WorkspaceClientCapabilities(
            workspace_edit=T.WorkspaceEditClientCapabilities(document_changes=True),
            configuration=True,
            diagnostics=T.DiagnosticWorkspaceClientCapabilities(refresh_support=True) if pull else None,
        ),
        window=T.WindowClientCapabilities(work_done_progress=True),
        **extra,
    )


async def initialize(client: LanguageClient, root: Optional[str] = None, caps=None, options=None):
    # the workspace folder is the server's reading boundary: the default holds every tmp_path
    root = root or tempfile.gettempdir()
    return await client.initialize_session(T.InitializeParams(
        capabilities=caps if caps is not None else capabilities(),
        root_uri=uris.from_fs_path(root),
        workspace_folders=[T.WorkspaceFolder(uri=uris.from_fs_path(root), name="root")],
        initialization_options=options))


def uri_of(path: str) -> str:
    return uris.from_fs_path(os.path.normpath(os.path.abspath(str(path))))


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1):
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=uri, language_id="shapescript", version=version, text=text)))


def position(text: str, offset: int) -> T.Position:
    line, ch = LineIndex(text).utf16_position(offset)
    return T.Position(line=line, character=ch)


def at(text: str, needle: str, delta: int = 0) -> T.Position:
    """The position of `needle` in text (plus `delta` code points)."""
    i = text.index(needle)
    return position(text, i + delta)


def replace(client: LanguageClient, uri: str, version: int, text: str, start: int, end: int, new: str) -> str:
    """Send one incremental change (offsets into `text`); return the new text."""
    rng = T.Range(start=position(text, start), end=position(text, end))
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangePartial(range=rng, text=new)]))
    return text[:start] + new + text[end:]


async def wait_until(client: LanguageClient, predicate, timeout: float = 15, what: str = "a publish"):
    """Wait until `predicate()` holds, looking again after each publish."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = predicate()
        if found:
            return found
        remaining = deadline - loop.time()
        if remaining <= 0:
            got = [(p.uri.rsplit("/", 1)[-1], p.version, len(p.diagnostics)) for p in client.publishes[-20:]]
            raise AssertionError(f"waited {timeout} s for {what}; last publishes: {got}")
        client.published.clear()
        try:
            await asyncio.wait_for(client.published.wait(), remaining)
        except asyncio.TimeoutError:
            pass


async def wait_version(client: LanguageClient, uri: str, version: int, timeout: float = 15):
    """The publish of this document version (waiting for it if it hasn't come)."""
    def find():
        for p in reversed(client.publishes):
            if p.uri == uri and p.version == version:
                return p
        return None
    return await wait_until(client, find, timeout, f"{uri} version {version}")


async def wait_publishes(client: LanguageClient, uri: str, count: int, timeout: float = 15) -> list:
    """The publishes of a document, once there are `count` of them."""
    def find():
        got = [p for p in client.publishes if p.uri == uri]
        return got if len(got) >= count else None
    return await wait_until(client, find, timeout, f"{count} publishes of {uri}")


def fresh(texts: dict, path: str, versions: Optional[dict] = None, dims=None) -> list:
    """The diagnostics a fresh workspace holding `texts` (path -> text) gives for `path`,
    converted as the server converts them, as plain JSON."""
    from shapescript_server import convert
    from shapescript_server.documents import Documents
    ws = Workspace(dims)
    docs = Documents()
    for p, t in texts.items():
        ws.set_text(p, t, (versions or {}).get(p))
        docs.open(uri_of(p), t, (versions or {}).get(p))
    path = ws.norm(path)

    def lines_for(p):
        f = ws.file(p)
        return f.lines if f is not None else LineIndex("")

    items = convert.diagnostics(ws.diagnostics(path), path, lines_for, docs.uri_for, docs.version)
    return as_json(items)


def as_json(value):
    return CONVERTER.unstructure(value)


def codes(publish) -> list:
    return sorted(str(d.code) for d in publish.diagnostics)


class RawServer(StdioClient):
    """The server under a bare JSON-RPC client, for messages pygls won't send (bad params,
    broken JSON)."""

    def __init__(self, command=None):
        super().__init__(command or SERVER, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                         stderr=subprocess.DEVNULL)

    def request(self, method: str, params, timeout: float = 15) -> dict:
        return super().request(method, params, timeout)

    def close(self):
        super().close(timeout=5)
