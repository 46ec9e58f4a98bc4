"""E0212: a name in `@export(…)` that is no target. Checked in targets.py
(`unknown_targets`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, Edit, Fix, error


def unknown_target(span, name: str, near, known) -> Diagnostic:
    """A name in `@export(…)` that is no target; `near` the closest known one, or None."""
    d = error("E0212", f"`{name}` isn't an export target", span, "no such target")
    if near:
        return d.help(f"there is a target with a similar name: `{near}`").fix(
            Fix.unsafe(f"write `{near}`", Edit.replacement(span, near)))
    return d.help("the targets are " + ", ".join(f"`{t}`" for t in known))
