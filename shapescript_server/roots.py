"""The workspace's folders and the files the server may read, from the client's JSON:
one rule for the server (settings.py, app.py) and for fast_start.py, which answers
before pygls (and lsprotocol's types) are loaded; so only `pygls.uris` here."""
from __future__ import annotations

import os
from typing import Iterable, Optional

from pygls import uris

from shapescript_core.files import DEFAULT_FILE_LIMIT, Access, usable_path


def file_path(uri: str) -> Optional[str]:
    """The normalised path of a `file:` URI (None for another scheme, or a path no file
    can have)."""
    p = uris.to_fs_path(uri) if isinstance(uri, str) and uri.startswith("file:") else None
    if not p or not usable_path(p):
        return None
    return os.path.normpath(os.path.abspath(p))


def root_from(folder_uris: Iterable, root_uri, root_path) -> Optional[str]:
    """The workspace's root folder: the first workspace folder, else rootUri, else rootPath."""
    for u in folder_uris:
        p = uris.to_fs_path(u) if isinstance(u, str) else None
        if p:
            return p
        break
    if isinstance(root_uri, str) and root_uri:
        p = uris.to_fs_path(root_uri)
        if p:
            return p
    if isinstance(root_path, str) and root_path:
        return root_path
    return None


def roots_from(folder_uris: Iterable, root_uri, root_path) -> list:
    """Every workspace folder (else rootUri, else rootPath): what the server may read."""
    folder_uris = list(folder_uris)
    out = []
    for u in folder_uris:
        p = uris.to_fs_path(u) if isinstance(u, str) else None
        if p:
            out.append(p)
    if not out:
        p = root_from(folder_uris, root_uri, root_path)
        if p:
            out.append(p)
    return [os.path.normpath(os.path.abspath(p)) for p in out if usable_path(p)]


def reading_access(roots: list, open_paths: Iterable[str], max_file_size: Optional[int]) -> Access:
    """Files inside the workspace folders (or, with none, the folders of the open
    documents), at most `max_file_size` each."""
    folders = roots or sorted({os.path.dirname(p) for p in open_paths})
    return Access.within(folders, max_file_size or DEFAULT_FILE_LIMIT)
