"""E0401: a shape that isn't the one expected. Checked in check/function.py
(`_annotated`, `_arg_shape`, `_for`, `_if`), check/builtins.py (each builtin's rule),
check/ops.py (`matmul`) and check/patterns.py (`_size_clash`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def shape(span, want: str, found: str, label: str) -> Diagnostic:
    """"expected [b n D], found [b n F]" (or "expected a weight [O I], found …")."""
    return error("E0401", f"expected {want}, found {found}", span, label)


LOOP_KEEPS_TYPE = "a value rebound in a loop keeps its type across iterations"
