"""E0402: two shapes that don't align by name. Checked in check/ops.py (`broadcast`) and
check/builtins.py (`_rope`, `_sdpa`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def cannot_combine(span, a: str, b: str, why: str, label: str) -> Diagnostic:
    return error("E0402", f"can't combine {a} with {b}: {why}", span, label)


NO_SUBSET = "neither has all the other's axes"
SUBSET_HELP = "rearrange or reduce one side so that its axes are a subset of the other's"
