"""Diagnostics for people (rustc's layout) and for tools (one JSON object per line)."""
from __future__ import annotations

import json
import os

from .diagnostics import Diagnostic, Span
from .syntax.source import LineIndex


def _lc(lines: LineIndex, offset: int) -> tuple[int, int]:
    line, col = lines.line_col(offset)
    return line + 1, col + 1


def span_range(lines: LineIndex, span: Span) -> dict:
    sl, sc = _lc(lines, span.abs_start)
    el, ec = _lc(lines, span.abs_end)
    return {"start": {"line": sl, "column": sc}, "end": {"line": el, "column": ec}}


def to_json(d: Diagnostic, lines_for) -> dict:
    lines = lines_for(d.path)
    return {
        "code": d.code,
        "severity": d.severity.word,
        "message": d.message,
        "file": d.path,
        "range": span_range(lines, d.span),
        "labels": ([{"range": span_range(lines, d.span), "message": d.primary_label, "primary": True}]
                   if d.primary_label else []) +
                  [{"range": span_range(lines_for(l.span.path), l.span), "message": l.message,
                    "file": l.span.path, "primary": False} for l in d.labels],
        "notes": list(d.notes),
        "help": list(d.helps),
        "fixes": [{"title": f.title, "applicability": f.applicability.name.lower(),
                   "edits": [{"file": e.span.path, "range": span_range(lines_for(e.span.path), e.span),
                              "text": e.text} for e in f.edits]} for f in d.fixes],
    }


def to_json_line(d: Diagnostic, lines_for) -> str:
    return json.dumps(to_json(d, lines_for), ensure_ascii=False)


def render_human(d: Diagnostic, lines_for, cwd: str | None = None) -> str:
    lines = lines_for(d.path)
    line, col = _lc(lines, d.span.abs_start)
    shown = os.path.relpath(d.path, cwd or os.getcwd()) if d.path else "<input>"
    if shown.startswith(".."):
        shown = d.path
    out = [f"{d.severity.word}[{d.code}]: {d.message}"]
    marks = [(d.span, d.primary_label, "^")] + [(l.span, l.message, "-") for l in d.labels
                                                  if l.span.path == d.path]
    rows = sorted({_lc(lines, s.abs_start)[0] for s, _, _ in marks})
    width = len(str(max(rows)))
    pad = " " * width
    out.append(f"{pad}--> {shown}:{line}:{col}")
    out.append(f"{pad} |")
    last = None
    for row in rows:
        if last is not None and row > last + 1:
            out.append(f"{pad} ...")
        text = lines.line_text(row - 1).replace("\t", "    ")
        out.append(f"{str(row).rjust(width)} | {text}")
        for s, label, ch in marks:
            sl, sc = _lc(lines, s.abs_start)
            if sl != row:
                continue
            el, ec = _lc(lines, s.abs_end)
            raw = lines.line_text(row - 1)
            end_col = ec if el == row else len(raw) + 1
            start_vis = len(raw[:sc - 1].replace("\t", "    "))
            n = max(1, len(raw[sc - 1:end_col - 1].replace("\t", "    ")))
            out.append(f"{pad} | {' ' * start_vis}{ch * n}{(' ' + label) if label else ''}".rstrip())
        last = row
    if d.helps or d.notes:
        out.append(f"{pad} |")
    for n in d.notes:
        out.append(f"{pad} = note: {n}")
    for h in d.helps:
        out.append(f"{pad} = help: {h}")
    for f in d.fixes:
        out.append(f"{pad} = fix: {f.title}")
    return "\n".join(out)
