"""E0408: a pattern that names the tensor's axes in another order. Checked in
check/patterns.py (`PatternMatcher.match`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error

HELP_ORDER = "write the axes in the order the tensor has them, or rearrange it first"


def axis_order(span, i: int, name: str, j: int, label: str) -> Diagnostic:
    """"the pattern calls axis 3 `m`, but `m` is axis 4" (1-based axes)."""
    return error("E0408", f"the pattern calls axis {i} `{name}`, but `{name}` is axis {j}", span,
                 label).help(HELP_ORDER)
