"""Running a recursive analysis on an explicit stack instead of Python's.

An analysis that follows the user's program (expressions inside expressions, calls into
functions that call further) is written as generators: where it would call itself, it
yields the generator of the sub-analysis and receives its result. `run` keeps those
generators on a list, so the depth of the user's program is bounded by memory, not by
Python's recursion limit.
"""
from __future__ import annotations


def run(gen):
    """The return value of `gen`, driving every generator it yields (and theirs)."""
    stack = [gen]
    value = None
    while True:
        try:
            sub = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value = stop.value
            continue
        stack.append(sub)
        value = None
