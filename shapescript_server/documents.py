"""The open documents as the client sees them: text and version, with LSP's incremental
changes applied here (positions in UTF-16), and the URI ⇄ path mapping.

Only the event-loop thread changes this store; the core thread reads versions from it
to drop work the client has moved past.
"""
from __future__ import annotations

import bisect
import os
from array import array
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import quote

from pygls import uris
from pygls.exceptions import JsonRpcInvalidParams

from shapescript_core.files import shown, usable_path
from shapescript_core.syntax.source import line_starts, offsets_array

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




@dataclass
class Document:
    uri: str
    path: str
    text: str
    version: Optional[int]
    starts: array = field(default_factory=lambda: array("I"))  # offset of each line's start

    def __post_init__(self):
        if not self.starts:
            self.starts = line_starts(self.text)

    def offset(self, line: int, character: int) -> int:
        """The code-point offset of an LSP position (UTF-16 units), clamped to the text."""
        starts, text = self.starts, self.text
        if line >= len(starts):
            return len(text)
        line = max(line, 0)
        start = starts[line]
        end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
        seg = text[start:end]
        if seg.isascii():
            return start + min(max(character, 0), len(seg))
        units = i = 0
        while i < len(seg) and units < character:
            units += 2 if ord(seg[i]) > 0xFFFF else 1
            i += 1
        return start + i

    def replace(self, start: int, end: int, new: str):
        """Replace text[start:end], keeping the line starts without a rescan."""
        if "\r" in new or "\r" in self.text:  # a \r joins or splits line breaks: rescan
            self.text = self.text[:start] + new + self.text[end:]
            self.starts = line_starts(self.text)
            return
        starts = self.starts
        la = bisect.bisect_right(starts, start) - 1
        lb = bisect.bisect_right(starts, end) - 1
        delta = len(new) - (end - start)
        added = offsets_array(len(self.text) + delta)
        if "\n" in new:
            added.extend(start + i + 1 for i, ch in enumerate(new) if ch == "\n")
        added.extend(map(delta.__add__, starts[lb + 1:]))
        if added.typecode == starts.typecode:
            starts[la + 1:] = added
        else:  # past 4 GiB: wider offsets
            self.starts = offsets_array(len(self.text) + delta)
            self.starts.extend(iter(starts[:la + 1]))
            self.starts.extend(added)
        self.text = self.text[:start] + new + self.text[end:]


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
            if rng is None:
                doc.text = ch.text
                doc.starts = line_starts(ch.text)
                continue
            start = doc.offset(rng.start.line, rng.start.character)
            end = doc.offset(rng.end.line, rng.end.character)
            if end < start:
                start, end = end, start
            doc.replace(start, end, ch.text)
        doc.version = version
        return doc

    def close(self, uri: str) -> Optional[Document]:
        doc = self.by_uri.pop(uri, None)
        if doc is not None and self.uri_by_path.get(doc.path) == uri:
            del self.uri_by_path[doc.path]
        return doc

    def __iter__(self):
        return iter(list(self.by_uri.values()))
