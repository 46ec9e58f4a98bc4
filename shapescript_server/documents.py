"""The open documents as the client sees them: text and version, with LSP's incremental
changes applied here (positions in UTF-16), and the URI ⇄ path mapping.

Only the event-loop thread changes this store; the core thread reads versions from it
to drop work the client has moved past.
"""
from __future__ import annotations

import os
from typing import Optional
from urllib.parse import quote

from pygls import uris
from pygls.exceptions import JsonRpcInvalidParams

from shapescript_core.files import shown, usable_path

from .document_text import Document

UNTITLED = os.path.join(os.sep, "__untitled__")


def path_of(uri: str) -> str:
    """The file path the core knows a document by (made up for non-file URIs).
    A file URI whose path no file can have (a NUL, a lone surrogate) is InvalidParams."""
    p = uris.to_fs_path(uri) if uri.startswith("file:") else None
    if not p:
        return os.path.join(UNTITLED, quote(uri, safe="", errors="backslashreplace"))
    if not usable_path(p):
        raise JsonRpcInvalidParams(f"`{shown(uri)[:200]}` names no file path: it holds a NUL or a lone surrogate")
    return os.path.normpath(os.path.abspath(p))




class Documents:
    def __init__(self):
        self.by_uri: dict[str, Document] = {}
        self.uri_by_path: dict[str, str] = {}

    def get(self, uri: str) -> Optional[Document]:
        return self.by_uri.get(uri)

    def version(self, uri: str) -> Optional[int]:
        d = self.by_uri.get(uri)
        return d.version if d is not None else None

    def uri_for(self, path: str) -> str:
        """The URI of a path: an open document's own URI, else a file URI."""
        uri = self.uri_by_path.get(path)
        if uri is not None:
            return uri
        return uris.from_fs_path(path) or ("file://" + path)

    def open(self, uri: str, text: str, version: Optional[int]) -> Document:
        doc = Document(uri, path_of(uri), text, version)
        self.by_uri[uri] = doc
        self.uri_by_path[doc.path] = uri
        return doc

    def change(self, uri: str, changes, version: Optional[int]) -> Optional[Document]:
        """Apply LSP content changes (incremental ranges in UTF-16, or whole texts)."""
        doc = self.by_uri.get(uri)
        if doc is None:
            return None
        for ch in changes:
            rng = getattr(ch, "range", None)
            doc.apply(None if rng is None else (rng.start.line, rng.start.character, rng.end.line, rng.end.character),
                      ch.text)
        doc.version = version
        return doc

    def close(self, uri: str) -> Optional[Document]:
        doc = self.by_uri.pop(uri, None)
        if doc is not None and self.uri_by_path.get(doc.path) == uri:
            del self.uri_by_path[doc.path]
        return doc

    def __iter__(self):
        return iter(list(self.by_uri.values()))
