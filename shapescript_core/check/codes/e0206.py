"""E0206: a call's arguments (their number, an unknown or repeated keyword, a missing
one, a pattern). Checked in check/function.py (`FnChecker._builtin_call`,
`_user_call`, `_arity_error`), check/builtins.py (`_concat`, `_window_ok`),
check/keyword_rules.py (rope's scaling keywords) and check/patterns.py
(`check_pattern_call`), for builtins and functions alike."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def arity_text(lo: int, hi, noun: str = "argument") -> str:
    if lo == hi:
        return f"{lo} {noun}" + ("s" if lo != 1 else "")
    if hi is None:
        return f"{lo} or more {noun}s"
    if hi == lo + 1:
        return f"{lo} or {hi} {noun}s"
    return f"{lo} to {hi} {noun}s"


def takes(span, fname: str, want: str, got: int, label: str = "") -> Diagnostic:
    """"`linear` takes 2 or 3 arguments, got 4" (`want` from arity_text)."""
    return error("E0206", f"`{fname}` takes {want}, got {got}", span, label)


def no_parameter(span, fname: str, name: str) -> Diagnostic:
    """A keyword the callee has no parameter for: builtins and functions alike."""
    return error("E0206", f"`{fname}` has no parameter `{name}`", span, "unknown keyword")


def given_twice(span, fname: str, name: str) -> Diagnostic:
    return error("E0206", f"`{fname}` gets `{name}` twice", span, "given again here")


def missing_argument(span, fname: str, name: str) -> Diagnostic:
    return error("E0206", f"`{fname}` needs `{name}=`", span, f"`{name}` is missing")


def needs_pattern(span, fname: str) -> Diagnostic:
    return error("E0206", f"`{fname}` needs an axis pattern", span, "write `L -> R` in the call")


WINDOW_NEEDS_MASK = "a sliding window narrows the causal mask: write `attn_mask=causal[n n], window=W`"


def not_with(span, fname: str, name: str, setting: str) -> Diagnostic:
    """A keyword the call has but its setting doesn't take: `rope(…, scaling="linear",
    beta_fast=32)`."""
    return error("E0206", f"`{fname}` takes no `{name}=` with {setting}", span, f"not a keyword of {setting}")
