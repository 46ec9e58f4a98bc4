"""E0201: a name that isn't defined (a local, a dim, a type, an axis). Checked in
check/function.py (`FnChecker._name`, `FnChecker.axis_name`) and check/env.py
(`DimTable._eval_op`, `resolve_type`); the "similar name" help is similar.py's."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def undefined(span, name: str, label: str) -> Diagnostic:
    return error("E0201", f"`{name}` isn't defined", span, label)
