"""E0303: arithmetic on indices or booleans. Checked in check/ops.py (`arithmetic_ok`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def takes_no(span, operand: str, holds: str, what: str, label: str) -> Diagnostic:
    """"`ids` holds indices, which take no arithmetic"."""
    return error("E0303", f"`{operand}` holds {holds}, which take no {what}", span, label)
