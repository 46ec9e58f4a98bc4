"""E0205: a name used as what it is not (called but not a function; `x[...]` but not a
mask). Checked in check/function.py (`FnChecker._call`, `FnChecker._mask`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def is_not(span, text: str, what: str, label: str) -> Diagnostic:
    """"`x` isn't a function" (or "a mask"): a name used as what it is not."""
    return error("E0205", f"`{text}` isn't {what}", span, label)
