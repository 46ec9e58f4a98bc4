"""E0412: a mask that doesn't fit the scores. Checked in check/builtins.py (`_sdpa`,
`_masked_fill`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def mask_mismatch(span, mask: str, scores: str, label: str) -> Diagnostic:
    return error("E0412", f"the mask is {mask}, but the scores are {scores}", span, label)
