"""E0210: an import that can't be read (no such file, not UTF-8). Checked by the
Workspace as it follows a file's imports (workspace/analysis.py); a missing import
hides the unknown names it may define (check/whole_file.py, `hide_unresolved`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def import_missing(imp) -> Diagnostic:
    return error("E0210", f"can't find `{imp.target}`", imp.span(imp.target_pos), "no such file next to this one")


def import_not_utf8(imp, where: str) -> Diagnostic:
    """The imported file exists but its bytes are not UTF-8 (`where`: the first bad byte)."""
    return error("E0210", f"can't read `{imp.target}`: it isn't UTF-8 ({where})", imp.span(imp.target_pos),
                 "this file can't be decoded").help("save the file as UTF-8")
