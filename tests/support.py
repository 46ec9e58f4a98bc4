"""Test helpers: check a source string, read expectations written as carets."""
from __future__ import annotations

import re
import textwrap

from shapescript_core.diagnostics import Severity
from shapescript_core.workspace import Workspace

CARET = re.compile(r"^(\s*)#(\s*)(\^+)\s+([EW]\d{4})\s*$")


def check(src: str, path: str = "/tmp/shapescript-test/case.ss", ws: Workspace | None = None):
    """(workspace, diagnostics) for a source string."""
    ws = ws or Workspace()
    ws.set_text(path, src)
    return ws, ws.diagnostics(path)


def errors(src: str, **kw) -> list:
    """[(code, 1-based line)] of the error diagnostics, sorted."""
    ws, diags = check(src, **kw)
    f = ws.file(kw.get("path", "/tmp/shapescript-test/case.ss"))
    return sorted((d.code, f.lines.line_of(d.span.abs_start) + 1) for d in diags
                  if d.severity == Severity.ERROR)


def codes(src: str) -> list:
    return [c for c, _ in errors(src)]


def carets(src: str):
    """Check a fixture whose expected diagnostics are written under their lines:

        y = x * m.w
    #       ^^^^^^^ E0302

    The carets give the columns of the diagnostic's primary span on the line above.
    Returns (expected, got) as sets of (code, line, start column, end column).
    """
    src = textwrap.dedent(src)
    lines = src.split("\n")
    code_lines, expected = [], set()
    for line in lines:
        m = CARET.match(line)
        if m and code_lines:
            start = line.index("^")
            expected.add((m.group(4), len(code_lines), start + 1, start + len(m.group(3)) + 1))
        else:
            code_lines.append(line)
    text = "\n".join(code_lines)
    ws, diags = check(text)
    f = ws.file("/tmp/shapescript-test/case.ss")
    got = set()
    for d in diags:
        if d.severity != Severity.ERROR:
            continue
        sl, sc = f.lines.line_col(d.span.abs_start)
        el, ec = f.lines.line_col(d.span.abs_end)
        got.add((d.code, sl + 1, sc + 1, ec + 1 if el == sl else 0))
    return expected, got
