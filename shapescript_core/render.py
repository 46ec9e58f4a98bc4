"""Diagnostics for people (rustc's layout), for tools (one JSON object per line) and for
GitHub Actions (one workflow command per line: an annotation on the pull request)."""
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


def _shown_path(path: str, cwd: str | None) -> str:
    """A file as the user names it: relative to the current folder when inside it."""
    if not path:
        return "<input>"
    shown = os.path.relpath(path, cwd or os.getcwd())
    return path if shown.startswith("..") else shown


# GitHub's escaping of workflow commands (actions/toolkit, command.ts): the message is
# data (%, CR, LF escaped), a property value also escapes `:` and `,`.
_GITHUB_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_GITHUB_PROPERTY = {**_GITHUB_DATA, ":": "%3A", ",": "%2C"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning"}  # info and hint: notice


def _github_escape(text: str, table: dict) -> str:
    return "".join(table.get(c, c) for c in text)


def render_github(d: Diagnostic, lines_for, cwd: str | None = None) -> str:
    """`::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=CODE::message`: one
    annotation, positions 1-based as in the JSON (the end column is past the span)."""
    r = span_range(lines_for(d.path), d.span)
    props = {"file": _shown_path(d.path, cwd), "line": r["start"]["line"], "col": r["start"]["column"],
             "endLine": r["end"]["line"], "endColumn": r["end"]["column"], "title": d.code}
    body = "\n".join([d.message] + [f"note: {n}" for n in d.notes] + [f"help: {h}" for h in d.helps])
    level = _GITHUB_LEVEL.get(d.severity.word, "notice")
    fields = ",".join(f"{k}={_github_escape(str(v), _GITHUB_PROPERTY)}" for k, v in props.items())
    return f"::{level} {fields}::{_github_escape(body, _GITHUB_DATA)}"


def render_human(d: Diagnostic, lines_for, cwd: str | None = None) -> str:
    lines = lines_for(d.path)
    line, col = _lc(lines, d.span.abs_start)
    shown = _shown_path(d.path, cwd)
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
