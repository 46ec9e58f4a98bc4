"""The files of the project that the queries across files (references, rename, workspace
symbols, call hierarchy) look at: the open ones, and every `.ss` file below the
workspace's roots (the editor's folders), walked as `shapescript check` walks a folder."""
from __future__ import annotations

from ..project_files import ss_files_below

LIMIT = 5000  # files: a root that holds more (a home folder opened by mistake) is cut short


def project_files(ws) -> list:
    out = dict.fromkeys(sorted(ws.open))
    for root in ws.roots:
        for p in ss_files_below(root):
            out.setdefault(ws.norm(p))
            if len(out) >= LIMIT:
                return list(out)
    return list(out)
