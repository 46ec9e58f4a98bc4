"""E0103: a tab in a block's indentation. Checked in syntax/lexer.py (`tokenize`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def tab_indent(span) -> Diagnostic:
    return error("E0103", "tabs can't indent a block", span, "this indentation has a tab")
