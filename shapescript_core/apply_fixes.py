"""Applying fixes' edits to text (the CLI's --fix; tests of every quick fix)."""
from __future__ import annotations

from .diagnostics import Applicability


def apply_edits(text: str, edits: list) -> str:
    """Apply non-overlapping edits (absolute offsets from their spans) to text."""
    ordered = sorted(edits, key=lambda e: (e.span.abs_start, e.span.abs_end), reverse=True)
    last_start = None
    for e in ordered:
        s, t = e.span.abs_start, e.span.abs_end
        if last_start is not None and t > last_start:
            continue  # overlaps an edit already applied
        text = text[:s] + e.text + text[t:]
        last_start = s
    return text


def safe_fix_edits(diags: list, threshold: Applicability = Applicability.SAFE) -> dict:
    """path -> edits of the first fix at or above `threshold` of each diagnostic."""
    out: dict = {}
    taken: dict = {}
    for d in diags:
        for f in d.fixes:
            if f.applicability < threshold or not f.edits:
                continue
            spans = [(e.span.path, e.span.abs_start, e.span.abs_end) for e in f.edits]
            if any(_overlaps(s, taken.get(s[0], [])) for s in spans):
                break
            for e, s in zip(f.edits, spans):
                out.setdefault(e.span.path, []).append(e)
                taken.setdefault(s[0], []).append(s)
            break
    return out


def _overlaps(s, spans) -> bool:
    _, a, b = s
    return any(not (b < x or y < a) or (a == b == x == y) for _, x, y in spans)
