"""E0410: einsum's axes (two sizes for one name, an output axis in no input). Checked in
check/patterns.py (`PatternMatcher._size_clash`, `_out_axis`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def einsum_sizes(span, name: str, a: str, b: str, label: str) -> Diagnostic:
    return error("E0410", f"einsum matches `{name}` with sizes {a} and {b}", span, label)


def einsum_new_axis(span, name: str) -> Diagnostic:
    return error("E0410", f"einsum's output axis `{name}` is in no input", span, "no input has this axis")
