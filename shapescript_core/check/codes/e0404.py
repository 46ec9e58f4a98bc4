"""E0404: an axis name that isn't one (`over=`, `causal[…]`, `concat`). Checked in
check/function.py (`FnChecker.axis_name`, `over_axes`, `_mask`) and check/builtins.py
(`_concat`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def not_an_axis(span, written: str, tensor: str) -> Diagnostic:
    """"`over=m`, but the tensor is [b n D]"."""
    return error("E0404", f"`over={written}`, but the tensor is {tensor}", span,
                 f"`{written}` is not an axis of the tensor")


def axis_names_only(span, what: str, found: str) -> Diagnostic:
    return error("E0404", f"`{what}` takes axis names, found `{found}`", span, "not an axis name")


def one_axis(span, fname: str, verb: str = "joins along") -> Diagnostic:
    """"`concat` joins along one axis" (`topk` chooses along, `take` gathers along)."""
    return error("E0404", f"`{fname}` {verb} one axis", span, "name one axis")


NAME_ONE_OF_ITS_AXES = "name one of the tensor's axes"
