"""E0203: a name defined twice in a file (items, fields, parameters). Checked in
check/env.py (`unique_names`) and by the Workspace across a file's items
(workspace/analysis.py, which still adds its help, "rename one of the two `x`", itself:
it comes here when the Workspace imports from check/codes/)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def defined_twice(span, name: str, first) -> Diagnostic:
    return error("E0203", f"`{name}` is defined twice", span, "defined again here").label(first, "first defined here")
