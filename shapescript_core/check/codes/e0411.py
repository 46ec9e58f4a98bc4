"""E0411: destructuring into the wrong number of names. Checked in check/function.py
(`FnChecker.block`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def destructure(span, what: str, names: int, label: str, gives: int | None = None) -> Diagnostic:
    """"`split` gives 3 tensors, but 2 names take them" (`gives`), or "a single value
    can't be destructured into 2 names"."""
    if gives is None:
        return error("E0411", f"{what} can't be destructured into {names} names", span, label)
    return error("E0411", f"{what} gives {gives} tensors, but {names} names take them", span, label)


def names_help(gives: int) -> str:
    return f"write {gives} names on the left"
