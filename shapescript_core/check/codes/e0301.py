"""E0301: a value of the wrong kind (a model, a function or a stack where a tensor or a
value goes). Checked in check/function.py (`_name`, `_field`, `_for`, `_bind_arg`,
`_unop`), check/builtins.py (`_tensor`, `_concat`), check/ops.py and check/patterns.py."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def kind(span, want: str, found: str, label: str) -> Diagnostic:
    """"expected a tensor, found model `Block`"."""
    return error("E0301", f"expected {want}, found {found}", span, label)


def not_a_tensor(span, found: str, label: str = "not a tensor") -> Diagnostic:
    return kind(span, "a tensor", found, label)
