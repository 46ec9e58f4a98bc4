"""E0406: a pattern's group that doesn't fit its axis. Checked in check/patterns.py
(`PatternMatcher.match`, `_match_group`, `_out_axis`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def group_mismatch(span, group: str, size: str, axis: int, axis_size: str, label: str) -> Diagnostic:
    """"group (H Dh) is 768, but axis 3 is 512" (a number item is its own group)."""
    return error("E0406", f"{group} is {size}, but axis {axis} is {axis_size}", span, label)


def nested_group(span) -> Diagnostic:
    return error("E0406", "a group can't hold another group", span, "nested group")


def unsized_names(span, group: str, a: str, b: str) -> Diagnostic:
    return error("E0406", f"group {group} has two unsized names: `{a}` and `{b}`", span,
                 "give all but one of these names a size (declare a dim)")


def group_cannot_divide(span, group: str, axis: int, num, den, label: str) -> Diagnostic:
    return error("E0406", f"group {group} can't divide axis {axis}: {num} / {den}", span, label)
