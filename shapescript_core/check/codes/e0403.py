"""E0403: a contraction (`@`, `linear`, `matmul`) whose axes differ in size. Checked in
check/ops.py (`matmul`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def contracts(span, op: str, a: str, b: str, label: str) -> Diagnostic:
    """"`@` contracts D with F"."""
    return error("E0403", f"`{op}` contracts {a} with {b}", span, label).help(
        "the last axis of the left side must have the size of the weight's input axis")
