"""W0101: a local that is never read. Checked in check/function.py (`FnChecker.check`);
its fix renames it with a leading underscore."""
from __future__ import annotations

from ...diagnostics import Diagnostic, Edit, Fix, warning


def never_used(span, name: str) -> Diagnostic:
    return warning("W0101", f"`{name}` is never used", span, "assigned here, never read").help(
        f"remove it, or name it `_{name}` if that is intended").fix(
        Fix.unsafe(f"Rename to `_{name}`", Edit(span, f"_{name}")))
