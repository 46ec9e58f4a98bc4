"""The syntax errors E0101-E0104, one constructor per code (or form of a code): the
lexer, the parser and the checker (a construct that parses but can't be read, such as
`Index` without `[V]`) word them the same way."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


# ---------------------------------------------------------------- E0101 syntax
def syntax(span, expected: str, found: str, label: str | None = None) -> Diagnostic:
    """The one headline of a syntax error: "expected X, found Y"."""
    return error("E0101", f"expected {expected}, found {found}", span,
                 f"expected {expected} here" if label is None else label)


# ---------------------------------------------------------------- E0102, E0103 layout
def bad_dedent(span) -> Diagnostic:
    return error("E0102", "this line's indentation matches no enclosing block", span,
                 "this indentation is not that of any block above")


def tab_indent(span) -> Diagnostic:
    return error("E0103", "tabs can't indent a block", span, "this indentation has a tab")


# ---------------------------------------------------------------- E0104 brackets and strings
def never_closed(span, opener: str, label: str) -> Diagnostic:
    return error("E0104", f"`{opener}` is never closed", span, label)
