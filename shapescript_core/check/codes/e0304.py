"""E0304: an argument of the wrong dtype or value. Checked in check/builtins.py (each
builtin's rule), check/keyword_rules.py (v0.3's scalar keywords) and check/function.py
(`_bind_arg`, `_unop`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def must_be(span, what: str, want: str, found: str, label: str) -> Diagnostic:
    """"`ids` must be Index[V], found f32"."""
    return error("E0304", f"`{what}` must be {want}, found {found}", span, label)
