"""E0405: a pattern whose sides don't hold the same axes. Checked in check/patterns.py
(`check_pattern_call`, `PatternMatcher._out_axis`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def loses_axis(span, fname: str, name: str, label: str | None = None) -> Diagnostic:
    return error("E0405", f"`{fname}` loses axis `{name}`", span,
                 f"`{name}` is not on the right side" if label is None else label)


def adds_axis(span, fname: str, name: str, label: str | None = None, why: str = "") -> Diagnostic:
    return error("E0405", f"`{fname}` adds axis `{name}`{why}", span,
                 f"`{name}` is not on the left side" if label is None else label)


def split_without_count(span) -> Diagnostic:
    return error("E0405", "`split` needs a group that starts with the number of parts, as in (3 H Dh)", span,
                 "no group starts with a number")
