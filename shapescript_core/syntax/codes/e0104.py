"""E0104: a bracket or a string that is never closed. Checked in syntax/lexer.py
(`tokenize`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def never_closed(span, opener: str, label: str) -> Diagnostic:
    return error("E0104", f"`{opener}` is never closed", span, label)
