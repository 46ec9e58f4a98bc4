"""E0407: a rank that doesn't match (a pattern's side, einsum's inputs, `causal`).
Checked in check/patterns.py (`PatternMatcher.match`, `check_pattern_call`) and
check/function.py (`_mask`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def pattern_rank(span, n: int, operand: str, m: int, label: str) -> Diagnostic:
    return error("E0407", f"the pattern has {n} axes, but `{operand}` has {m}", span, label)


def einsum_sides(span, inputs: int, sides: int) -> Diagnostic:
    return error("E0407", f"einsum has {inputs} inputs, but the pattern has {sides} sides", span, "one side per input")


def causal_rank(span, got: int) -> Diagnostic:
    return error("E0407", f"`causal` takes 2 axes, got {got}", span, "write causal[n m]")
