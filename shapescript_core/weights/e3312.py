"""E3312: a dim with no value, which an export needs. Checked in weights/specs.py
(`_resolve`), at export."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


def e3312(dim: str, span) -> Diagnostic:
    return (error("E3312", f"`{dim}` has no value", span, "declared without a value")
            .help(f"pass a value with --dim {dim}=VALUE, or declare it as `dim {dim} = VALUE`"))
