"""E0204: a model has no field of that name. Checked in check/function.py
(`FnChecker._field`); the "similar name" help is similar.py's."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def no_field(span, model: str, field: str) -> Diagnostic:
    return error("E0204", f"`{model}` has no field `{field}`", span, f"not a field of `{model}`")
