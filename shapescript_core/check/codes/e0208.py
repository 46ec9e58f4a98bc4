"""E0208: a dim's value (a cycle, not positive, too large, an inexact division).
Checked in check/env.py (`DimTable._cycle`, `_compute`, `_eval_one`, `_eval_op`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def dim_cycle(span, name: str, path: list) -> Diagnostic:
    return error("E0208", f"`{name}` is defined through itself: {' → '.join(path)}", span,
                 "this dim's value depends on itself")


def dim_not_positive(span, name: str, value, written: str | None = None) -> Diagnostic:
    """`written`: the dim's arithmetic, when its value is computed."""
    head = f"`{name} = {written}` is not positive: {value}" if written else f"`{name}` must be positive, found {value}"
    return error("E0208", head, span, "a size is a positive integer")


def dim_too_large(span, name: str, written: str) -> Diagnostic:
    """A dim's value (or a step of its arithmetic) past 2^63 − 1; `written` is abbreviated."""
    short = written if len(written) <= 40 else written[:30] + f"… ({len(written):,} characters)"
    return error("E0208", f"`{name} = {short}` is too large", span,
                 "a size is at most 2^63 − 1 (9223372036854775807)")


def dim_inexact(span, written: str, num: str, den: str) -> Diagnostic:
    return error("E0208", f"`{written}` doesn't divide: {num} / {den}", span, f"{num} is not a multiple of {den}")
