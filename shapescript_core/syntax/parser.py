"""Per-item parsing: split a file into top-level items, parse each with lark (LALR).

A line at column 0 that starts with `dim`, `model`, `fn`, `@` or `import` begins a new
item, so a syntax error never spreads past its item and an edit re-parses only the
items whose text changed (`parse_file(..., reuse=...)`).
"""
from __future__ import annotations

import bisect
import itertools
import re
import threading
from pathlib import Path

from lark import Transformer
from lark.lexer import Lexer
from lark.parsers.lalr_analysis import Shift

from . import fast_items, lark_table
from .codes import e0101
from ..diagnostics import Diagnostic, debugging, internal_error
from . import ast as A
from .lexer import BOM, KEYWORDS, LexProblem, Token, int_literal, tokenize

_GRAMMAR = (Path(__file__).parent / "grammar.lark").read_text()
# THE rule for where a top-level item starts: a line beginning with an item keyword or
# `@` (a decorator). _START_LINE (below, for splitting a file) is this at a line's start.
_ITEM_HEAD = r"(?:dim|model|fn|import)\b|@"
ITEM_START = re.compile(_ITEM_HEAD)  # at a given offset: the first line after a byte order mark
HEADER_NAME = re.compile(r"\s*(?:@[^\n]*\n\s*)*(dim|model|fn)\s+([A-Za-z_][A-Za-z0-9_]*)")

TOKEN_WORDS = {
    "_NL": "a new line", "_INDENT": "an indented block", "_DEDENT": "the end of the block",
    "$END": "the end of the item", "NAME": "a name", "INT": "a number", "FLOAT": "a number",
    "STRING": "a string", "PSTART": "an axis pattern", "COLON": "`:`", "LPAR": "`(`",
    "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`", "EQUAL": "`=`",
    "ARROW": "`->`", "PIPE": "`|>`", "DOT": "`.`", "AT": "`@`",
}
# Which expected terminals to name first in "expected X": the most telling one.
EXPECT_ORDER = ["COLON", "RPAR", "RSQB", "ARROW", "EQUAL", "_NL", "_INDENT", "NAME",
                "COMMA", "LPAR", "LSQB", "STRING", "INT", "_DEDENT", "$END"]


def _pos(x) -> A.Pos:
    if isinstance(x, Token):
        return _shared((x.start_pos, x.end_pos))
    return x.pos


def _join(a, b) -> A.Pos:
    return _shared((_pos(a)[0], _pos(b)[1]))


_shared = A.shared_pos


class _Build(Transformer):
    """Builds the AST while the LALR parser reduces (no parse tree is made)."""

    # ---- sizes
    def size_name(self, c):
        return A.SName(str(c[0]), _pos(c[0]))

    def size_int(self, c):
        return A.SInt(int_literal(c[0].value), _pos(c[0]))

    def size_paren(self, c):
        inner = c[1]
        inner.pos = _join(c[0], c[2])
        return inner

    def size_bin(self, c):
        return A.SBin(str(c[1]), c[0], c[2], _join(c[0], c[2]))

    def axes(self, c):
        return list(c)

    # ---- types
    def dtype(self, c):
        index = c[2] if len(c) > 1 else None
        return A.DtypeExpr(str(c[0]), index, _join(c[0], c[-1]))

    def tensor_type(self, c):
        dt = c[3] if len(c) > 3 else None
        t = A.TensorTypeExpr(c[1], dt, _join(c[0], c[-1]))
        t.axes_pos = _join(c[0], c[2])
        return t

    def named_type(self, c):
        index = c[2] if len(c) > 1 else None
        return A.NamedTypeExpr(str(c[0]), index, _join(c[0], c[-1]))

    # ---- patterns
    def pname(self, c):
        return A.PName(str(c[0]), _pos(c[0]))

    def pint(self, c):
        return A.PInt(int_literal(c[0].value), _pos(c[0]))

    def pgroup(self, c):
        return A.PGroup(list(c[1:-1]), _join(c[0], c[-1]))

    def pside(self, c):
        return A.PSide(list(c), _join(c[0], c[-1]))

    def pattern(self, c):
        return A.Pattern([c[0]], c[2], _join(c[0], c[2]))

    def einsum_pat(self, c):
        sides = [x for x in c if isinstance(x, A.PSide)]
        return A.Pattern(sides[:-1], sides[-1], _join(sides[0], sides[-1]))

    # ---- expressions
    def name(self, c):
        return A.Name(str(c[0]), _pos(c[0]))

    def number(self, c):
        t = c[0]
        return A.Number(float(t.value), t.type == "INT", t.value, _pos(t))

    def string(self, c):
        return A.String(str(c[0])[1:-1], _pos(c[0]))

    def const(self, c):
        return A.Const(str(c[0]), _pos(c[0]))

    def paren(self, c):
        inner = c[1]
        return inner  # keep the inner span: carets point at the expression itself

    def tuple(self, c):
        items = [x for x in c if not isinstance(x, Token)]
        return A.TupleExpr(items, _join(c[0], c[-1]))

    def unop(self, c):
        op = "!" if str(c[0]) in ("!", "not") else str(c[0])
        return A.Unop(op, c[1], _join(c[0], c[1]))

    def binop(self, c):
        return A.Binop(str(c[1]), c[0], c[2], _join(c[0], c[2]), _pos(c[1]))

    def if_expr(self, c):
        return A.IfExpr(c[0], c[2], c[4], _join(c[0], c[4]))

    def field_read(self, c):
        return A.FieldRead(c[0], str(c[2]), _pos(c[2]), _join(c[0], c[2]))

    def mask(self, c):
        return A.Mask(c[0], c[2], _join(c[0], c[3]))

    def kwarg(self, c):
        return A.Arg(str(c[0]), c[2], _join(c[0], c[2]))

    def pattern_arg(self, c):
        return c[1]

    def arglist(self, c):
        return [x if isinstance(x, (A.Arg, A.Pattern)) else A.Arg(None, x, x.pos)
                for x in c if not isinstance(x, Token)]

    def args(self, c):
        args: list = []
        pattern = None
        for x in c:
            if isinstance(x, list):
                args = [a for a in x if isinstance(a, A.Arg)]
                pattern = next((a for a in x if isinstance(a, A.Pattern)), pattern)
            elif isinstance(x, A.Pattern):
                pattern = x
        return (args, pattern)

    def call(self, c):
        args, pattern = c[2]
        call = A.Call(c[0], args, pattern, _join(c[0], c[3]))
        call.args_pos = (_pos(c[1])[1], _pos(c[3])[0])
        return call

    def pipe(self, c):
        lhs, target = c[0], c[2]
        arg = A.Arg(None, lhs, lhs.pos)
        if isinstance(target, A.Call):
            target.args.insert(0, arg)
            target.pos = _join(lhs, target)
            target.piped = True
            return target
        call = A.Call(target, [arg], None, _join(lhs, target), piped=True)
        call.args_pos = (target.pos[1], target.pos[1])
        return call

    # ---- statements
    def assign(self, c):
        ann = c[2] if len(c) == 5 else None
        return A.Assign(str(c[0]), _pos(c[0]), ann, c[-1], _join(c[0], c[-1]))

    def tuple_assign(self, c):
        names = [(str(t), _pos(t)) for t in c if isinstance(t, Token) and t.type == "NAME"]
        return A.TupleAssign(names, c[-1], _join(c[0], c[-1]))

    def return_stmt(self, c):
        return A.Return(c[1], _join(c[0], c[1]))

    def for_stmt(self, c):
        if c[2].type == "COMMA":  # `for i, layer in ...`: the index, then the copy
            body = [x for x in c[7:] if not isinstance(x, Token)]
            return A.For(str(c[3]), _pos(c[3]), c[5], body, _join(c[0], body[-1]), str(c[1]), _pos(c[1]))
        body = [x for x in c[5:] if not isinstance(x, Token)]
        return A.For(str(c[1]), _pos(c[1]), c[3], body, _join(c[0], body[-1]))

    # ---- items
    def field(self, c):
        init = c[4] if len(c) > 3 else None
        return A.Field(str(c[0]), _pos(c[0]), c[2], init, _join(c[0], c[-1]))

    def param(self, c):
        default = c[4] if len(c) > 3 else None
        return A.Param(str(c[0]), _pos(c[0]), c[2], default, _join(c[0], c[-1]))

    def params(self, c):
        return [x for x in c if isinstance(x, A.Param)]

    def names(self, c):
        return [(str(t), _pos(t)) for t in c if t.type == "NAME"]

    def decorator(self, c):
        args = c[3] if len(c) > 2 else []
        return A.Decorator(str(c[1]), args, _join(c[0], c[-1]))

    def import_item(self, c):
        return ("import", c)

    def dim_item(self, c):
        return ("dim", c)

    def model_item(self, c):
        return ("model", c)

    def fn_item(self, c):
        return ("fn", c)

    def start(self, c):
        return c[0]


class UnexpectedToken(Exception):
    def __init__(self, token: Token, expected: set):
        super().__init__(token.type)
        self.token = token
        self.expected = expected


class _Driver:
    """A tight LALR loop over lark's parse table and its tree-building callbacks.

    lark builds the tables and the callbacks (with its `?rule` inlining and filtering of
    `_`-terminals); this loop only avoids per-token overhead that a file of ten thousand
    lines would feel.
    """

    def __init__(self):
        lark = lark_table.parser(_GRAMMAR, _NoLexer, _Build())  # built once, then read back
        inner = lark.parser.parser.parser
        table = inner.parse_table
        self.start = table.start_states["start"]
        self.end = table.end_states["start"]
        self.rows: dict = {}
        for state, row in table.states.items():
            compiled = {}
            for term, (action, arg) in row.items():
                # plain str keys: lark's Token compares slowly as a dict key
                if action is Shift:
                    compiled[str(term)] = (True, arg, 0, None)
                else:
                    unit = (arg.options.expand1 and arg.alias is None and len(arg.expansion) == 1
                            and not arg.expansion[0].name.startswith("_"))
                    # `?rule: x` with one child is the child itself: no call needed
                    compiled[str(term)] = (False, str(arg.origin.name), len(arg.expansion),
                                           None if unit else inner.callbacks[arg])
            self.rows[state] = compiled

    def parse(self, tokens: list):
        rows = self.rows
        states = [self.start]
        values: list = []
        end = len(tokens)
        for i in range(end + 1):
            tok = tokens[i] if i < end else None
            ttype = tok.type if tok is not None else "$END"
            while True:
                row = rows[states[-1]]
                act = row.get(ttype)
                if act is None:
                    if tok is None:
                        last = tokens[-1].end_pos if tokens else 0
                        tok = Token("$END", "", last, last)
                    raise UnexpectedToken(tok, {k for k in row if k.isupper() or k.startswith("_")})
                shift, arg, size, cb = act
                if shift:
                    states.append(arg)
                    values.append(tok)
                    break
                if cb is None:  # a unit rule: the value stays, only the state changes
                    states[-1] = rows[states[-2]][arg][1]
                    continue
                if size:
                    kids = values[-size:]
                    del states[-size:]
                    del values[-size:]
                else:
                    kids = []
                values.append(cb(kids))
                states.append(rows[states[-1]][arg][1])
                if tok is None and states[-1] == self.end:
                    return values[-1]


class _NoLexer(Lexer):
    """Tokens come from lexer.py; lark's lexer is never used."""

    def __init__(self, conf):
        pass

    def lex(self, *args):  # pragma: no cover - never called
        return iter(())


_local = threading.local()


def _driver() -> _Driver:
    d = getattr(_local, "driver", None)
    if d is None:
        d = _local.driver = _Driver()
    return d


def _describe(tok: Token) -> str:
    if tok.type in ("_NL", "_INDENT", "_DEDENT", "$END"):
        return TOKEN_WORDS[tok.type]
    if tok.type == "PSTART":
        return "an axis pattern"
    return f"`{tok.value}`"


EXPRESSION_START = {"NAME", "INT", "FLOAT", "STRING", "LPAR", "MINUS", "BANG", "NOT", "TRUE",
                    "FALSE", "INF"}


def _expected(expected: set) -> str:
    if len(expected & EXPRESSION_START) >= 3:
        return "an expression"
    if "_NL" in expected and {"PLUS", "PIPE"} <= expected:
        return "an operator or the end of the line"
    if "_NL" in expected and "PIPE" in expected:
        return "`|>` or the end of the line"
    for k in EXPECT_ORDER:
        if k in expected:
            return TOKEN_WORDS.get(k, k)
    return "something else"


def _parse_tokens(tokens: list[Token]):
    return _driver().parse(tokens)


def _syntax_error(item: A.Item, e: Exception, tokens: list[Token]) -> Diagnostic:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            end = len(item.text.rstrip())
            start, stop = end, end
            found = "the end of the item"
        else:
            start, stop = tok.start_pos, tok.end_pos
            found = _describe(tok)
        if tok.type == "_NL":  # point at the end of the line, not past it
            start = stop = tok.start_pos
        expected = _expected(set(e.expected))
        return e0101.syntax(item.span((start, max(stop, start))), expected, found)
    return e0101.syntax(item.span((0, min(len(item.text), 1))), "an item", "text the parser can't read", "")


def _lex_problem(item: A.Item, p: LexProblem) -> Diagnostic:
    return p.make(item.span((p.start, p.end)))


# `dim NAME = 123` (a comment after it allowed): the commonest item, built without the
# lexer and the LALR parser (the same item they build: tests/test_scale.py compares them).
# A file of a million dims checks in a third of the time, and without a million token lists.
_SIMPLE_DIM = re.compile(r"dim[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([0-9]+)[ \t]*(?:#[^\n]*)?\n*\Z")


def _plain_literal(digits: str) -> bool:
    """A valid size (1 to 18 digits, not 0): its node is built when asked."""
    return len(digits) <= 18 and bool(digits.lstrip("0"))


def _simple_dim(m, item: A.FullDim) -> A.FullDim:
    """The item of a `_SIMPLE_DIM` match (at the item's start in the text it matched)."""
    item.name = m.group(1)  # its span is derived when asked (DimItem.name_pos): no tuple kept
    digits = m.group(2)
    if _plain_literal(digits):
        item.value = A.LITERAL_IN_TEXT
    else:  # 0 or too large: checked now, E0208
        at = m.start()
        item.value = A.SInt(int_literal(digits), A.shared_pos((m.start(2) - at, m.end(2) - at)))
    return item


def parse_item(text: str, path: str, offset: int) -> A.Item:
    """Parse one item's text. Never raises: a broken item carries its diagnostics. A
    function whose header parses is a function even when its body does not: its body's
    syntax error is its own, and its callers still see its signature (an edit that
    breaks a body changes nothing for them, docs/architecture.md)."""
    m = _SIMPLE_DIM.match(text)
    if m is not None and m.group(1) not in KEYWORDS:
        return _simple_dim(m, A.FullDim(text, path, offset))
    try:
        if text.startswith("model"):
            item = fast_items.model(text, path, offset)
            if item is not None:
                return item
        tokens, problems = tokenize(text)
        parsed, failure = _parse_or_failure(tokens, problems)
        if parsed is None:
            item = _function_of_header(text, path, offset, failure)
            if item is None:
                item = _broken(text, path, offset)
            item.syntax_errors = _failure_errors(item, failure, tokens, problems)
            return item
        item = _build_item(*parsed, text, path, offset)
        # non-fatal layout problems (tabs, dedents) are reported, the item still checks
        if problems:
            item.layout_errors = [_lex_problem(item, p) for p in problems]
        return item
    except Exception as exc:  # noqa: BLE001 - a parser bug is shown as E0001, never a clean item
        if debugging():
            raise
        item = _broken(text, path, offset)
        item.syntax_errors = [internal_error("parsing this item", item.span((0, min(1, len(text)))), exc)]
        return item


def _parse_or_failure(tokens: list, problems: list):
    """((kind, children), None) when the tokens parse, else (None, what stopped them: a
    fatal layout problem or the parser's UnexpectedToken)."""
    fatal = [p for p in problems if p.fatal]
    if fatal:
        return None, fatal[0]
    try:
        return _parse_tokens(tokens), None
    except UnexpectedToken as e:
        return None, e


def _failure_errors(item: A.Item, failure, tokens: list, problems: list) -> list:
    if isinstance(failure, LexProblem):
        return [_lex_problem(item, failure)]
    # a layout problem explains the parse error that follows it
    return [_lex_problem(item, problems[0])] if problems else [_syntax_error(item, failure, tokens)]


def _failure_at(failure, text: str) -> int:
    """Where a parse stopped (a missing body stops it past the header)."""
    if isinstance(failure, LexProblem):
        return failure.start
    tok = failure.token
    return len(text) if tok.type == "$END" else tok.start_pos


# ---- a function's header alone: what its callers see (the interface depth)
# the characters that matter to where a header ends: brackets, strings, comments, and a
# colon that ends its line
_HEADER_MARK = re.compile(r'[()\[\]]|"[^"\n]*"?|#[^\n]*|:[ \t]*(?:#[^\n]*)?(?:\n|\Z)|\n')
_FN_LINE = re.compile(r"^fn\b", re.M)
_STAND_IN_BODY = "    return 0\n"  # what the grammar needs after a header: never kept


def header_end(text: str) -> int | None:
    """Where a function item's header ends (after the line break of its `:` line), or
    None when the text has no such header: the first colon at the end of a line, outside
    brackets, after the parameters' `)`."""
    m = _FN_LINE.search(text)
    if m is None:
        return None
    depth, params = 0, False
    for mk in _HEADER_MARK.finditer(text, m.start()):
        c = mk.group()[0]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            params = params or (c == ")" and depth == 0)
        elif c == ":" and depth == 0 and params:
            return mk.end()
        elif c == "\n" and depth == 0:
            return None
    return None


def _header_item(text: str, path: str, offset: int):
    """(the FnItem of a function's header, no body set, where the header ends, whether
    the header had a layout problem), or None when the header does not parse alone (the
    commonest headers: fast_items.py)."""
    fast = fast_items.header(text, path, offset)
    if fast is not None:
        return fast[0], fast[1], False
    end = header_end(text)
    if end is None:
        return None
    head = text[:end] if text[end - 1:end] == "\n" else text[:end] + "\n"
    tokens, problems = tokenize(head + _STAND_IN_BODY)
    parsed, failure = _parse_or_failure(tokens, problems)
    if parsed is None or parsed[0] != "fn":
        return None
    item = _build_item(*parsed, text, path, offset)
    del item.__dict__["body"]  # the stand-in's
    return item, end, bool(problems)


def _function_of_header(text: str, path: str, offset: int, failure):
    """A function whose body (not its header) fails to parse: its header's FnItem, with
    no statements; None for any other item."""
    got = _header_item(text, path, offset)
    if got is None or _failure_at(failure, text) < got[1]:
        return None
    got[0].__dict__["body"] = []
    return got[0]


def parse_interface(text: str, path: str, offset: int) -> A.Item:
    """Parse an item at interface depth: a function's header only (its body, and whether
    it parses, read from the text when asked: FnItem.body), any other item whole."""
    if text.startswith(("fn", "@", "model")):
        item = fast_items.deferred(text, path, offset)  # the commonest: nothing built until read
        if item is not None:
            if type(item) is A.FnItem:
                item.__dict__.update(body_dropped=True, errors_unknown=True)
            return item
    if text.startswith(("fn", "@")):
        try:
            got = _header_item(text, path, offset)
        except Exception:  # noqa: BLE001 - parse_item, below, reports it
            got = None
        if got is not None and not got[2]:  # (a header with a layout problem: parsed whole)
            item = got[0]
            d = item.__dict__
            d["body_dropped"] = True
            d["errors_unknown"] = True
            return item
    return parse_item(text, path, offset)


_STAND_IN_HEADER = "fn f() -> T:\n"  # what the grammar needs before a body: never kept


def _complete_body(item: A.FnItem) -> None:
    """Parse a function's statements again from its text (a dropped body, or one never
    parsed: then its syntax and layout errors too, anchored at this item). Only the body
    is read: its tokens, from the header's end, follow a stand-in header's (a header
    parsed at interface depth had no problem of its own: `parse_interface`)."""
    d = item.__dict__
    unknown = d.pop("errors_unknown", False)
    end = header_end(item.text)
    if end is None or item.text[end - 1:end] != "\n":  # (a text whose header ends it: read whole)
        tokens, problems = tokenize(item.text)
    else:
        tokens, problems = tokenize(item.text, end)
        tokens[:0] = tokenize(_STAND_IN_HEADER)[0]
    parsed, failure = _parse_or_failure(tokens, problems)
    if parsed is None:
        d["body"] = []
        if unknown:
            d["syntax_errors"] = _failure_errors(item, failure, tokens, problems)
        elif not item.syntax_errors:
            raise RuntimeError(f"the dropped body of the item at {item.path}:{item.offset} no longer parses")
        return
    fresh = _build_item(*parsed, item.text, item.path, item.offset)
    d["body"] = fresh.__dict__.get("body", [])
    if unknown and problems:
        d["layout_errors"] = [_lex_problem(item, p) for p in problems]


A.body_parser = _complete_body


def _broken(text: str, path: str, offset: int) -> A.BrokenItem:
    item = A.BrokenItem(text, path, offset)
    m = HEADER_NAME.match(text)
    if m:
        item.declared_kind = m.group(1)
        item.name = m.group(2)
        item.name_pos = (m.start(2), m.end(2))
    return item


def _build_item(kind: str, c: list, text: str, path: str, offset: int) -> A.Item:
    if kind == "import":
        item = A.ImportItem(text, path, offset)
        s = c[1]
        item.target = str(s)[1:-1]
        item.target_pos = _pos(s)
        item.name = None
    elif kind == "dim":
        item = A.FullDim(text, path, offset)
        item.name, item.name_pos = str(c[1]), _pos(c[1])
        item.value = c[3] if len(c) > 2 else None
    elif kind == "model":
        item = A.ModelItem(text, path, offset)
        item.name, item.name_pos = str(c[1]), _pos(c[1])
        item.fields = [x for x in c if isinstance(x, A.Field)]
    else:
        item = A.FnItem(text, path, offset)
        decos = [x for x in c if isinstance(x, A.Decorator)]
        rest = c[len(decos):]
        item.decorators = decos
        item.name, item.name_pos = str(rest[1]), _pos(rest[1])
        item.params = rest[3]
        item.params_pos = (_pos(rest[2])[0], _pos(rest[4])[1])
        item.ret = rest[6]
        item.header_pos = (_pos(rest[0])[0], _pos(rest[7])[1])
        item.body = [x for x in rest[8:] if not isinstance(x, Token)]
    return item


# ---- splitting a file into items
# an item starts at column 0 (a form feed before it is a page break, as in Python):
# ITEM_START's rule at each line's start. It is a regex of its own because the scan
# runs in the regex engine (`^` with re.M finds every line), and `^` does not match
# after a byte order mark, where _item_starts uses ITEM_START itself.
_START_LINE = re.compile(rf"^\f*(?:{_ITEM_HEAD})", re.M)
# not blank, not a column-0 comment (a byte order mark at the file's start is neither)
_CODE_LINE = re.compile(r"^\ufeff?[ \t\f]*[^ \t\f\r\n#\ufeff]|^[ \t\f]+#", re.M)


def split_items(text: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int, str]]:
    """(start, end, doc) of each item's text in the file.

    An item starts at a column-0 line beginning with an item keyword or `@`; decorator
    lines and the `fn` they decorate stay together. Blank lines and column-0 comments
    after an item's last line are not part of it; the comment lines directly above an
    item are its doc. Text before the first item that is not blank or a comment forms a
    chunk of its own (which fails to parse, as it should). The scan runs in the regex
    engine: only item boundaries are looked at in Python. `lo` and `hi` limit it to a
    region that starts at an item's start and ends at one (or the end of the text).
    """
    return list(iter_items(text, lo, hi))


def iter_items(text: str, lo: int = 0, hi: int | None = None):
    """split_items one chunk at a time: parsing a file of a million items holds no list
    of a million chunks (nor of their starts) beside the items."""
    hi = len(text) if hi is None else hi
    starts = _item_starts(text, lo, hi)
    first = next(starts, None)
    junk = _CODE_LINE.search(text, 0, hi if first is None else first) if lo == 0 else None
    if junk:
        starts = itertools.chain([first], starts) if first is not None else iter(())
        first = _line_start(text, junk.start())
    pos, k = first, 0
    while pos is not None:
        nxt = next(starts, None)
        end = _code_end(text, pos, hi if nxt is None else nxt)
        doc = _doc_above(text, pos) if not (junk and k == 0) else ""
        yield pos, end, doc
        pos, k = nxt, k + 1


def _item_starts(text: str, lo: int, hi: int):
    """The start of each item in text[lo:hi], in order."""
    last = None
    decorators_only = False
    found = (m.start() for m in _START_LINE.finditer(text, lo, hi))
    if lo == 0 and text.startswith(BOM) and ITEM_START.match(text, 1):
        # the first item starts after the byte order mark, which no `^` matches before
        found = itertools.chain([1], found)
    for pos in found:
        is_deco = text.startswith("@", pos)
        if decorators_only and last is not None and (is_deco or text.startswith("fn", pos)) \
                and _only_decorators(text, last, pos):
            decorators_only = is_deco
            continue
        if last is not None:
            yield last
        last = pos
        decorators_only = is_deco
    if last is not None:
        yield last


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _only_decorators(text: str, start: int, stop: int) -> bool:
    for line in text[start:stop].split("\n"):
        if line.strip() and not line.startswith("@") and not line.startswith("#"):
            return False
    return True


def _code_end(text: str, start: int, limit: int) -> int:
    """End of the last line in [start, limit) that is code (not blank, not a col-0 comment)."""
    end = _after_last_visible(text, start, limit)
    while end > start:
        line_start = text.rfind("\n", start, end - 1) + 1 if end - 1 > start else start
        if line_start < start:
            line_start = start
        line = text[line_start:end]
        if line.strip() and not line.startswith("#"):
            return end
        end = line_start
    return start


def _after_last_visible(text: str, start: int, limit: int) -> int:
    """The end of the line (its break included) that holds the last character in
    [start, limit) that is not white space, or `start` when there is none: the blank lines
    before `limit` skipped a chunk at a time in C (twenty million blank lines took 30 s
    one at a time)."""
    hi = limit
    while hi > start:
        lo = max(start, hi - _BLANK_CHUNK)
        kept = len(text[lo:hi].rstrip())
        if kept:
            nl = text.find("\n", lo + kept - 1, limit)
            return limit if nl < 0 else nl + 1
        hi = lo
    return start


_BLANK_CHUNK = 1 << 16


def _doc_above(text: str, pos: int) -> str:
    lines = []
    end = pos
    while end > 0:
        ls = text.rfind("\n", 0, end - 1) + 1
        line = text[ls:end].rstrip("\r\n").lstrip(BOM)
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
        end = ls
    return "\n".join(reversed(lines))


def parse_file(text: str, path: str, reuse: dict | None = None, interface: bool = False) -> list[A.Item]:
    """Parse a whole file into items, reusing unchanged items from `reuse`.

    `reuse` maps an item's text to the list of items with that text from a previous
    parse; reused items get their new offset and doc. With `interface`, functions are
    parsed at interface depth (`parse_interface`: their bodies when read). Never raises.
    """
    return _parse_chunks(text, path, iter_items(text), reuse, interface)


def parse_head(text: str, path: str, limit: int) -> list[A.Item]:
    """The items of a file that start before offset `limit`, as parse_file makes them:
    what an editor shows of a file just opened, parsed before the rest."""
    return _parse_chunks(text, path, itertools.takewhile(lambda c: c[0] < limit, iter_items(text)), None)


def count_items(text: str, most: int) -> int:
    """How many items the file has, counted up to `most`."""
    return sum(1 for _ in itertools.islice(iter_items(text), most))


def syntax_errors(items) -> list[Diagnostic]:
    """The syntax and layout errors of these items: known as soon as they are parsed."""
    out: list = []
    for it in items:
        out.extend(it.syntax_errors)
        out.extend(getattr(it, "layout_errors", None) or ())
    return out


def parsed_syntax_errors(items) -> list[Diagnostic]:
    """The syntax and layout errors of those of these items whose errors are known: a
    function read at interface depth and not yet read whole is left out, not parsed."""
    return syntax_errors(it for it in items if not _errors_unknown(it))


def _errors_unknown(item) -> bool:
    d = getattr(item, "__dict__", None)  # (a simple dim has none: its errors are known)
    return d is not None and d.get("errors_unknown", False)


def _parse_chunks(text: str, path: str, chunks, reuse: dict | None, interface: bool = False) -> list[A.Item]:
    parse = parse_interface if interface else parse_item
    items: list[A.Item] = []
    shared = None  # the FileText of the DimItems made here
    for start, end, doc in chunks:
        item = None
        if reuse:
            bucket = reuse.get(text[start:end])
            if bucket:
                item = bucket.pop()
                if doc and type(item) is A.DimItem:
                    item = None  # a doc comment above it now: a DimItem has no room for one
                else:
                    item.offset = start
        if item is None:
            m = _SIMPLE_DIM.match(text, start, end)
            if m is not None and m.group(1) not in KEYWORDS:  # parse_item's fast path
                if not doc and _plain_literal(m.group(2)) and _line_end(text, start) == end:
                    if shared is None:
                        shared = A.FileText(text, path)
                    item = A.DimItem.in_source(shared, start)  # its text left in the file's
                else:
                    item = _simple_dim(m, A.FullDim(text[start:end], path, start))
            else:
                item = parse(text[start:end], path, start)
        if doc or item.doc:
            item.doc = doc  # else the class's "": no string per item
        items.append(item)
    rebase(items, text)
    return items


def _line_end(text: str, start: int) -> int:
    """The end of the line at `start`, its break included (the text of a DimItem there)."""
    e = text.find("\n", start)
    return len(text) if e < 0 else e + 1


def rebase(items: list, text: str):
    """Point the dims whose text is a slice of an older version of the file at `text`
    (where each is at its offset now): no older version stays alive."""
    now = None  # the FileText of `text`, shared by all
    for it in items:
        if type(it) is A.DimItem:
            old = it._src
            if old.text is not text:
                if now is None or now.path != old.path:
                    now = A.FileText(text, old.path)
                it._src = now


def changed_range(old: str, new: str) -> tuple[int, int, int]:
    """(start, old end, new end) of the one region in which two texts differ."""
    n = min(len(old), len(new))
    p, step = 0, 4096
    while p < n and old[p:p + step] == new[p:p + step]:
        p += step
    p = min(p, n)
    lo, hi = p, min(p + step, n)  # the first difference is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if old[lo:mid + 1] == new[lo:mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    p = lo
    s, limit = 0, n - p  # a common suffix, not overlapping the prefix
    while s < limit:
        k = min(step, limit - s)
        if old[len(old) - s - k:len(old) - s] != new[len(new) - s - k:len(new) - s]:
            break
        s += k
    lo, hi = s, min(s + step, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid:len(old) - s] == new[len(new) - mid:len(new) - s]:
            lo = mid
        else:
            hi = mid - 1
    s = lo
    return p, len(old) - s, len(new) - s


def reparse_file(old_items: list, old_text: str, text: str, path: str, interface: bool = False) -> list[A.Item]:
    """The items of `text`, given the items of `old_text`: only the items around the
    changed region are split and parsed again (`interface`: at interface depth,
    parse_file); the ones after it move."""
    if not old_items:
        return parse_file(text, path, interface=interface)
    p, old_end, new_end = changed_range(old_text, text)
    starts = [it.offset for it in old_items]
    if p < starts[0] + 1:
        reuse: dict = {}
        for it in old_items:
            if type(it) is not A.DimItem:  # a simple dim is made again as fast (no dict of a million lines)
                reuse.setdefault(it.text, []).append(it)
        return parse_file(text, path, reuse, interface)
    i = bisect.bisect_right(starts, p) - 1
    lo_idx = max(i - 1, 0)  # one item of context before: an edit can join two items
    k = bisect.bisect_right(starts, old_end)
    hi_idx = min(k + 1, len(old_items))  # and one after
    delta = new_end - old_end
    region_lo = starts[lo_idx] if lo_idx > 0 else 0  # the file's start: text before items
    region_hi = starts[hi_idx] + delta if hi_idx < len(old_items) else len(text)
    reuse = {}
    for it in old_items[lo_idx:hi_idx]:
        reuse.setdefault(it.text, []).append(it)
    middle = _parse_chunks(text, path, iter_items(text, region_lo, region_hi), reuse, interface)
    after = old_items[hi_idx:]
    for it in after:
        it.offset += delta
    items = old_items[:lo_idx] + middle + after
    rebase(items, text)
    return items
