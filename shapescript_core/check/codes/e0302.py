"""E0302: two float dtypes mixed in one operation. Checked in check/ops.py (`align`,
`matmul`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def mixes(span, op: str, a: str, b: str, label: str) -> Diagnostic:
    return error("E0302", f"`{op}` mixes {a} and {b}", span, label)


def cast_help(dtype: str) -> str:
    return f"cast one side with `to(x, {dtype})`"
