"""The open documents as the client sees them: text and version, with LSP's incremental
changes applied here (positions in UTF-16), and the URI ⇄ path mapping.

Only the event-loop thread changes this store; the core thread reads versions from it
to drop work the client has moved past.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional
from urllib.parse import quote

from pygls import uris

from shapescript_core.syntax.source import LineIndex

UNTITLED = os.path.join(os.sep, "__untitled__")


def path_of(uri: str) -> str:
    """The file path the core knows a document by (made up for non-file URIs)."""
    p = uris.to_fs_path(uri) if uri.startswith("file:") else None
    if not p:
        return os.path.join(UNTITLED, quote(uri, safe=""))
    return os.path.normpath(os.path.abspath(p))


@dataclass
class Document:
    uri: str
    path: str
    text: str
    version: Optional[int]
    _lines: Optional[LineIndex] = None

    @property
    def lines(self) -> LineIndex:
        if self._lines is None or self._lines.text is not self.text:
            self._lines = LineIndex(self.text)
        return self._lines


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
        text = doc.text
        for ch in changes:
            rng = getattr(ch, "range", None)
            if rng is None:
                text = ch.text
                continue
            lines = doc.lines if text is doc.text else LineIndex(text)
            start = lines.offset_utf16(rng.start.line, rng.start.character)
            end = lines.offset_utf16(rng.end.line, rng.end.character)
            if end < start:
                start, end = end, start
            text = text[:start] + ch.text + text[end:]
        doc.text = text
        doc.version = version
        return doc

    def close(self, uri: str) -> Optional[Document]:
        doc = self.by_uri.pop(uri, None)
        if doc is not None and self.uri_by_path.get(doc.path) == uri:
            del self.uri_by_path[doc.path]
        return doc

    def __iter__(self):
        return iter(list(self.by_uri.values()))
