"""Tokenizer and the indentation-aware post-lexer for one top-level item.

Produces lark Tokens for the LALR parser, handling what a context-free grammar can't:
layout (_NL, _INDENT, _DEDENT), `|>`-led continuation lines, newlines inside brackets,
tabs (E0103), inconsistent dedents (E0102), unclosed brackets and strings (E0104), and
the start of bare axis patterns (PSTART) inside calls.
"""
from __future__ import annotations

import re
import sys

from .codes import e0101, e0102, e0103, e0104


KEYWORDS = {
    "dim": "DIM", "model": "MODEL", "fn": "FN", "return": "RETURN", "for": "FOR",
    "in": "IN", "import": "IMPORT", "true": "TRUE", "false": "FALSE", "inf": "INF",
    "or": "OR", "and": "AND", "not": "NOT",
}
# `A if C else B` (v0.2): `if` and `else` are keywords only between two operands, so that
# they stay names everywhere else (a field called `else`, `m.if`): LANGUAGE.md §1 does not
# reserve them
CONTEXTUAL = {"if": "IF", "else": "ELSE"}
_OPERAND_END = {"NAME", "INT", "FLOAT", "STRING", "RPAR", "RSQB", "TRUE", "FALSE", "INF"}
_OPERAND_START = {"NAME", "INT", "FLOAT", "STRING", "LPAR", "MINUS", "BANG", "NOT", "TRUE", "FALSE", "INF"}
OPS = {
    "|>": "PIPE", "->": "ARROW", "**": "POW", "==": "COMPOP", "!=": "COMPOP",
    "<=": "COMPOP", ">=": "COMPOP", "<": "COMPOP", ">": "COMPOP",
    "(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", ",": "COMMA", ":": "COLON",
    ".": "DOT", "=": "EQUAL", "@": "AT", "+": "PLUS", "-": "MINUS", "*": "STAR",
    "/": "SLASH", "!": "BANG", "//": "DSLASH", "%": "PERCENT",
}
TOKEN_RE = re.compile(
    r"""[ \t\r\f]*(?:(?P<NL>\n)|(?P<COMMENT>\#[^\n]*)
      |(?P<FLOAT>\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?)
      |(?P<INT>\d+)|(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)
      |(?P<STRING>"[^"\n]*")|(?P<USTRING>"[^"\n]*)
      |(?P<OP>\|>|->|\*\*|==|!=|<=|>=|//|[-+*/%@()\[\],:.=<>!])
      |(?P<BAD>.)|$)""",
    re.VERBOSE,
)
OPEN = {"(": ")", "[": "]"}
TAB_WIDTH = 8


class LexProblem:
    """A layout or token problem found while lexing: where it is in the item, and the
    constructor of its diagnostic (syntax/codes/), called with the span."""

    __slots__ = ("make", "start", "end", "fatal")

    def __init__(self, make, start, end, fatal=False):
        self.make, self.start, self.end, self.fatal = make, start, end, fatal


class Token:
    """A token: its terminal name (as in grammar.lark), text and span in the item."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int):
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __str__(self):
        return self.value

    def __repr__(self):
        return f"Token({self.type}, {self.value!r})"


_tok = Token
_intern = sys.intern


def _indent_width(ws: str) -> int:
    """The column an indentation reaches. A form feed starts the count again, as in
    Python (a page break in the file, not part of the indentation)."""
    col = 0
    for ch in ws:
        if ch == "\f":
            col = 0
        else:
            col = (col // TAB_WIDTH + 1) * TAB_WIDTH if ch == "\t" else col + 1
    return col


BOM = "\ufeff"


_LONGEST_INT = 4000  # digits: Python converts at most 4,300 between text and int
_TOO_LONG = 10 ** _LONGEST_INT


def int_literal(text: str) -> int:
    """An integer literal's value. One too long for Python to convert stands for a value
    past every limit (10^4000: the checks say "too large"), never an exception."""
    digits = text.lstrip("0")
    return int(text) if len(digits) <= _LONGEST_INT else _TOO_LONG


def tokenize(text: str, start: int = 0) -> tuple[list[Token], list[LexProblem]]:
    """All tokens of an item, with layout tokens, and the problems found; from `start`,
    a line's start, when given (a function's body after its header: positions stay the
    item's)."""
    problems: list[LexProblem] = []
    out: list[Token] = []
    brackets: list[Token] = []
    indents = [0]
    line_has_tokens = False  # a logical line is open
    at_line_start = True
    # a byte order mark opens the file's first item when the file has one: it is no token
    line_start = start or (1 if text.startswith(BOM) else 0)
    for m in TOKEN_RE.finditer(text, line_start):
        kind = m.lastgroup
        if kind is None:  # trailing whitespace at the end of the text
            continue
        start = m.start(kind)
        if kind == "NL":
            if not brackets:
                at_line_start = True
            line_start = m.end()
            continue
        if kind == "COMMENT":
            continue
        value = m.group(kind)
        if at_line_start and not brackets:
            at_line_start = False
            ws = text[line_start:start]
            continuation = value == "|>" and line_has_tokens
            if "\t" in ws and not continuation:
                problems.append(LexProblem(e0103.tab_indent, line_start, start))
            if not continuation:
                if line_has_tokens:
                    out.append(_tok("_NL", "\n", line_start - 1, line_start - 1))
                    line_has_tokens = False
                width = _indent_width(ws)
                if width > indents[-1]:
                    indents.append(width)
                    out.append(_tok("_INDENT", ws, line_start, start))
                elif width < indents[-1]:
                    while width < indents[-1]:
                        indents.pop()
                        out.append(_tok("_DEDENT", "", start, start))
                    if width != indents[-1]:
                        problems.append(LexProblem(e0102.bad_dedent, line_start, start))
                        # go on as if the line stood at the enclosing block's indentation
        line_has_tokens = True
        if kind == "NAME":  # one string per name, shared by every node that holds it
            out.append(_tok(KEYWORDS.get(value, "NAME"), _intern(value), start, m.end()))
        elif kind == "OP":
            tok = _tok(OPS[value], value, start, m.end())
            if value in OPEN:
                brackets.append(tok)
            elif value in (")", "]") and brackets:
                brackets.pop()
            out.append(tok)
        elif kind == "USTRING":
            problems.append(LexProblem(lambda span: e0104.never_closed(span, '"', "this string has no closing quote"),
                                       start, start + 1, fatal=True))
            return out, problems
        elif kind == "BAD":
            problems.append(LexProblem(lambda span, v=value: e0101.syntax(span, "an expression", f"`{v}`",
                                                                      "not a token of the language"),
                                       start, m.end(), fatal=True))
            return out, problems
        else:
            out.append(_tok(kind, value, start, m.end()))
    if brackets:
        b = brackets[0]
        problems.append(LexProblem(lambda span: e0104.never_closed(span, b.value, f"this `{b.value}` has no matching "
                                                                          f"`{OPEN[b.value]}`"),
                                   b.start_pos, b.end_pos, fatal=True))
        return out, problems
    end = len(text.rstrip())
    if line_has_tokens:
        out.append(_tok("_NL", "\n", end, end))
    while len(indents) > 1:
        indents.pop()
        out.append(_tok("_DEDENT", "", end, end))
    return _mark_patterns(_mark_conditionals(out)), problems


def _mark_conditionals(toks: list[Token]) -> list[Token]:
    """`if` and `else` between the end of an operand and the start of another are the
    conditional's keywords; anywhere else they are names."""
    for i in range(1, len(toks) - 1):
        t = toks[i]
        if t.type == "NAME" and t.value in CONTEXTUAL and toks[i - 1].type in _OPERAND_END \
                and toks[i + 1].type in _OPERAND_START:
            t.type = CONTEXTUAL[t.value]
    return toks


def _mark_patterns(toks: list[Token]) -> list[Token]:
    """Insert PSTART where a call's bare axis pattern begins.

    In a call's parentheses, a `:` at depth one starts einsum patterns; otherwise a `->`
    at depth one makes the argument holding it a pattern. A function's parameter list
    (`fn NAME(`) is not a call.
    """
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, t in enumerate(toks):
        if t.type in ("LPAR", "LSQB"):
            stack.append(i)
        elif t.type in ("RPAR", "RSQB") and stack:
            match[stack.pop()] = i
    inserts: list[int] = []
    for i, t in enumerate(toks):
        if t.type != "LPAR" or i == 0 or i not in match:
            continue
        prev = toks[i - 1].type
        if prev not in ("NAME", "RPAR"):
            continue
        if prev == "NAME" and i >= 2 and toks[i - 2].type == "FN":
            continue
        j = match[i]
        k = i + 1
        seg_start = i + 1
        colon = arrow_seg = None
        while k < j:
            tk = toks[k].type
            if tk in ("LPAR", "LSQB") and k in match:
                k = match[k] + 1
                continue
            if tk == "COLON":
                colon = k
                break
            if tk == "COMMA":
                seg_start = k + 1
            elif tk == "ARROW" and arrow_seg is None:
                arrow_seg = seg_start
            k += 1
        if colon is not None:
            inserts.append(colon + 1)
        elif arrow_seg is not None:
            inserts.append(arrow_seg)
    if not inserts:
        return toks
    result: list[Token] = []
    ins = set(inserts)
    for i, t in enumerate(toks):
        if i in ins:
            result.append(_tok("PSTART", "", t.start_pos, t.start_pos))
        result.append(t)
    return result
