"""E0102: a line whose indentation matches no enclosing block. Checked in
syntax/lexer.py (`tokenize`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def bad_dedent(span) -> Diagnostic:
    return error("E0102", "this line's indentation matches no enclosing block", span,
                 "this indentation is not that of any block above")
