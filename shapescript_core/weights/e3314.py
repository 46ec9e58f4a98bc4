"""E3314: the checkpoint and the source are not the same model. Checked, and its
headline, label, notes and help worded, in weights/import_diagnostics.py (the roles'
words: arch/roles.py); this builds the diagnostic."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


def e3314(headline: str, span, label: str, notes, help_text: str) -> Diagnostic:
    """The checkpoint and the source are not the same model: one diagnostic, whatever
    the number of tensors that differ."""
    d = error("E3314", headline, span, label)
    for n in notes:
        d = d.note(n)
    return d.help(help_text)
