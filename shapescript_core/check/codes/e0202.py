"""E0202: a free size name in a model field, which must be a declared dim. Checked in
check/env.py (`build_model`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def free_name_in_field(span, name: str) -> Diagnostic:
    return error("E0202", f"`{name}` in a model field must be a declared dim", span,
                 "not a dim").help(f"declare it with `dim {name} = …`")
