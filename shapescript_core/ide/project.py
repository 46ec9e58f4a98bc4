"""The files of the project that the queries across files (references, rename, workspace
symbols, call hierarchy) look at: the open ones, and every `.ss` file below the
workspace's roots (the editor's folders), found by `files.walk_files` (bounded; no
symlink followed out of a root; hidden and dependency folders skipped)."""
from __future__ import annotations

from ..files import walk_files


def project_files(ws) -> list:
    out = dict.fromkeys(sorted(ws.open))
    for p in walk_files(ws.roots, ".ss", access=ws.access if ws.access.roots is not None else None):
        out.setdefault(ws.norm(p))
    return list(out)
