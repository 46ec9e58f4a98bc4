"""The "did you mean" help and its fix, which several codes share (E0201 names, E0204
fields, E0205 functions, E0206 parameters, E0404 axes): the closest known name
(check/suggest.py finds it)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, Edit, Fix


def similar(d: Diagnostic, what: str, name) -> Diagnostic:
    """The help line naming the closest known name, when there is one."""
    if name:
        d.help(f"there is {what} with a similar name: `{name}`")
    return d


def replace_with(span, name: str) -> Fix:
    """Unsafe: it guesses the intent, so `--fix` leaves it to the user."""
    return Fix.unsafe(f"Replace with `{name}`", Edit(span, name))
