"""E0409: a return that doesn't match the signature. Checked in check/function.py
(`_check_return`, `_check_returns`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def returns(span, fn: str, found: str, want: str, label: str) -> Diagnostic:
    return error("E0409", f"`{fn}` returns {found}, but its signature says {want}", span, label)


def never_returns(span, fn: str, want: str) -> Diagnostic:
    return error("E0409", f"`{fn}` never returns, but its signature says {want}", span, "no `return` in this function")
