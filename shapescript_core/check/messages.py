"""The language's diagnostics that are raised from more than one place, one constructor
per code (or per form of a code), so that every place words a mistake the same way."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


# ---------------------------------------------------------------- E0210 imports
def import_missing(imp) -> Diagnostic:
    return error("E0210", f"can't find `{imp.target}`", imp.span(imp.target_pos), "no such file next to this one")


def import_not_utf8(imp, where: str) -> Diagnostic:
    """The imported file exists but its bytes are not UTF-8 (`where`: the first bad byte)."""
    return error("E0210", f"can't read `{imp.target}`: it isn't UTF-8 ({where})", imp.span(imp.target_pos),
                 "this file can't be decoded").help("save the file as UTF-8")
