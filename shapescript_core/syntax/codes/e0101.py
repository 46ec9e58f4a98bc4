"""E0101: a syntax error, "expected X, found Y". Raised by syntax/parser.py
(`_syntax_error`, what the LALR parser can't read), syntax/lexer.py (`tokenize`, a stray
token) and the checker (check/env.py `resolve_type`, check/function.py
`_check_returns`: a construct that parses but can't be read)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def syntax(span, expected: str, found: str, label: str | None = None) -> Diagnostic:
    """The one headline of a syntax error: "expected X, found Y"."""
    return error("E0101", f"expected {expected}, found {found}", span,
                 f"expected {expected} here" if label is None else label)
