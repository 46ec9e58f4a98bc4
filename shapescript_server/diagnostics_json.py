"""The core's diagnostics as the JSON LSP sends them (`Diagnostic`, its fixes in `data`),
built from plain values: no lsprotocol, no pygls.

The one conversion of a diagnostic: the server publishes this JSON as it is, its other
uses (code actions, pull answers, Export) structure it into lsprotocol's `Diagnostic`
(convert.py), and fast_start.py publishes it before pygls is loaded.

Positions are UTF-16 code units, as LSP requires; the core's offsets are code points.
`lines_for(path)` gives a file's `LineIndex`, `uri_for(path)` its URI and
`version_for(uri)` the version of an open document (None when it is not open).
"""
from __future__ import annotations

from typing import Callable

from shapescript_core.diagnostics import Severity, doc_url
from shapescript_core.syntax.source import LineIndex

SOURCE = "shapescript"
UNNECESSARY = {"W0101"}  # codes whose span is unused code
# LSP's DiagnosticSeverity and DiagnosticTag.Unnecessary
SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}
HINT = 4
TAG_UNNECESSARY = 1


def position(lines: LineIndex, off: int) -> dict:
    line, ch = lines.utf16_position(off)
    return {"line": line, "character": ch}


def range_(lines: LineIndex, start: int, end: int) -> dict:
    return {"start": position(lines, start), "end": position(lines, end)}


def span_range(lines_for: Callable, span) -> dict:
    return range_(lines_for(span.path), span.abs_start, span.abs_end)


def message(d) -> str:
    return "\n".join([d.message] + [f"note: {n}" for n in d.notes] + [f"help: {h}" for h in d.helps])


def fix_data(fix, lines_for: Callable, uri_for: Callable, version_for: Callable) -> dict:
    """A fix as plain JSON for the diagnostic's `data`: its edits by URI, with the
    versions of the open documents they were computed against."""
    edits: dict = {}
    versions: dict = {}
    for e in fix.edits:
        uri = uri_for(e.span.path)
        edits.setdefault(uri, []).append({"range": span_range(lines_for, e.span), "newText": e.text})
        versions[uri] = version_for(uri)
    return {"title": fix.title, "applicability": fix.applicability.name.lower(),
            "edits": edits, "versions": versions}


def diagnostic(d, lines_for: Callable, uri_for: Callable, version_for: Callable) -> dict:
    out = {"range": span_range(lines_for, d.span), "message": message(d),
           "severity": SEVERITY.get(d.severity, HINT), "code": d.code,
           "codeDescription": {"href": doc_url(d.code)}, "source": SOURCE}
    if d.code in UNNECESSARY:
        out["tags"] = [TAG_UNNECESSARY]
    related = []
    if d.primary_label:
        related.append({"location": {"uri": uri_for(d.path), "range": span_range(lines_for, d.span)},
                        "message": d.primary_label})
    for lab in d.labels:
        related.append({"location": {"uri": uri_for(lab.span.path), "range": span_range(lines_for, lab.span)},
                        "message": lab.message})
    if related:
        out["relatedInformation"] = related
    if d.fixes:
        out["data"] = {"code": d.code, "fixes": [fix_data(f, lines_for, uri_for, version_for) for f in d.fixes]}
    return out


def diagnostics(diags: list, path: str, lines_for: Callable, uri_for: Callable,
                version_for: Callable) -> list:
    """The LSP diagnostics of one file, in source order."""
    own = [d for d in diags if d.path == path]
    own.sort(key=lambda d: (d.span.abs_start, d.span.abs_end, d.code, d.message, d.primary_label))
    return [diagnostic(d, lines_for, uri_for, version_for) for d in own]
