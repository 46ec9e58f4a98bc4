"""The formatter: one canonical layout, in plain text (no LSP).

    format_text(text)                 -> str: the whole file formatted
    format_pieces(text)               -> [Piece]: what each item and each gap becomes
    format_edits(text)                -> [Piece]: the pieces that change (the file's line breaks)
    format_range(text, start, end)    -> [Piece]: the changed pieces the range touches
    format_markdown(text)             -> str: a Markdown text's ```shapescript blocks formatted

The layout:
- four spaces per block; a `|>` that starts a line, and a line inside brackets, one
  more level than its statement (and one per bracket open at its start);
- a space around binary operators, `=`, `->` and `|>`, and after `,` and `:`; none
  inside a call's or a type's brackets, around `.`, after a unary `-` or `!`, around
  the `=` of a keyword argument, after a decorator's `@`; inside `[...]` (sizes)
  the operators are written tight (`[H*Dh D]`) and the axes one space apart;
  patterns one space apart (`b n (H Dh) -> b H n Dh`);
- a pipeline stays on one line while it fits in 100 columns and the source wrote it on
  one; when it breaks, each `|>` step gets a line of its own;
- one blank line between items; consecutive `dim`s (and imports) may stay together,
  and then their `=` line up; comment lines are kept, blank lines collapsed to one,
  the comment lines directly above an item stay attached to it (its doc);
- trailing whitespace removed, a file ends with one line break.

Only whitespace changes: every token and every comment is kept, in order. An item that
has a syntax or layout error (or that the lexer stops on) is left exactly as it is, so
formatting never changes a diagnostic; and an item whose result would not lex to the
same tokens is left as it is too (a safety net: that would be a formatter bug).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..syntax import ast as A
from ..syntax.lexer import BOM, tokenize
from ..syntax.parser import parse_file
from ..syntax.source import normalize_newlines

INDENT = "    "
MAX_WIDTH = 100
LAYOUT = {"_NL", "_INDENT", "_DEDENT", "PSTART"}
BINARY = {"PLUS", "MINUS", "STAR", "SLASH", "AT", "POW", "COMPOP", "OR", "AND", "PIPE", "ARROW", "EQUAL"}
OPERAND_END = {"NAME", "INT", "FLOAT", "STRING", "TRUE", "FALSE", "INF", "RPAR", "RSQB"}
COMMENT = re.compile(r"#[^\n]*")


@dataclass(frozen=True)
class Piece:
    """The text [start, end) of the original becomes `text`."""

    start: int
    end: int
    text: str


# ---------------------------------------------------------------- whole files
def format_text(text: str) -> str:
    return "".join(p.text for p in format_pieces(text))


def format_range(text: str, start: int, end: int) -> list:
    """The pieces that change among those overlapping [start, end]."""
    return format_edits(text, (start, end))


def format_edits(text: str, rng=None) -> list:
    """The pieces that change (all, or those overlapping `rng`), their text written with
    the file's own line breaks (`\r\n` when it has them)."""
    nl = "\r\n" if "\r\n" in text else "\n"
    out = []
    for p in format_pieces(text):
        new = p.text.replace("\n", nl) if nl != "\n" else p.text
        if text[p.start:p.end] != new and (rng is None or _overlaps(p, rng)):
            out.append(Piece(p.start, p.end, new))
    return out


def _overlaps(p: Piece, rng) -> bool:
    """A piece the range touches: an item or gap it overlaps; an empty gap inside it."""
    start, end = rng
    if p.start == p.end:
        return start <= p.start <= end
    return p.start < max(end, start + 1) and start < p.end


def format_pieces(text: str) -> list:
    """Pieces covering the whole text, in order: the gaps between items (blank and
    comment lines) and the items. `text` must have `\\n` line breaks."""
    text = normalize_newlines(text)
    bom = BOM if text.startswith(BOM) else ""
    items = parse_file(text, "<format>")
    pieces = []
    pos = 0
    prev = None
    formatted = [format_item(it) for it in items]
    _align_dims(items, formatted, text)
    for it, new in zip(items, formatted):
        gap = text[pos:it.offset]
        pieces.append(Piece(pos, it.offset, _gap(gap, prev, it, bom if pos == 0 else "")))
        pieces.append(Piece(it.offset, it.offset + len(it.text), new))
        pos = it.offset + len(it.text)
        prev = it
    pieces.append(Piece(pos, len(text), _tail(text[pos:], bom if not items else "")))
    return pieces


def _lines(gap: str) -> list:
    """The lines of a gap (each blank or a comment), trailing blanks removed."""
    return [ln.rstrip() for ln in gap.split("\n")]


def _collapse(lines: list) -> list:
    out: list = []
    for ln in lines:
        if ln == "" and out and out[-1] == "":
            continue
        out.append(ln)
    return out


def _together(prev, item) -> bool:
    """Items that may stand without a blank line between them: dims, imports."""
    return prev is not None and ((isinstance(prev, A.DimItem) and isinstance(item, A.DimItem))
                                 or (isinstance(prev, A.ImportItem) and isinstance(item, A.ImportItem)))


def _gap(gap: str, prev, item, bom: str) -> str:
    if bom and gap.startswith(bom):
        gap = gap[len(bom):]
    lines = _lines(gap)[:-1]  # the last is the empty start of the item's line
    lead = 0
    while lead < len(lines) and lines[lead] == "":
        lead += 1
    body = _collapse(lines[lead:])
    if prev is None:
        return bom + "".join(ln + "\n" for ln in body)
    # `lines` came after the previous item's last line break: lead-1 blank lines... the
    # previous item's text ends with "\n", so each line here is a line of its own
    blank = min(lead, 1) if _together(prev, item) else 1
    return "\n" * blank + "".join(ln + "\n" for ln in body)


def _tail(tail: str, bom: str) -> str:
    """The comment lines after the last item (or a file of comments only)."""
    if bom and tail.startswith(bom):
        tail = tail[len(bom):]
    lines = _lines(tail)
    while lines and lines[-1] == "":
        lines.pop()
    lead = 0
    while lead < len(lines) and lines[lead] == "":
        lead += 1
    body = _collapse(lines[lead:])
    if not body:
        return bom
    return bom + ("\n" if lead and not bom else "") + "".join(ln + "\n" for ln in body)


def _align_dims(items: list, formatted: list, text: str):
    """Line up the `=` of consecutive dims (no blank line between them)."""
    run: list = []

    def flush():
        if len(run) > 1:
            width = max(len(items[k].name) for k in run)
            for k in run:
                it = items[k]
                head = f"dim {it.name} = "
                if formatted[k].startswith(head):
                    formatted[k] = f"dim {it.name.ljust(width)} = " + formatted[k][len(head):]
        run.clear()

    for k, it in enumerate(items):
        simple = isinstance(it, A.DimItem) and not it.syntax_errors and formatted[k].startswith(f"dim {it.name} = ")
        if not simple:
            flush()
            continue
        if run:
            gap = text[items[k - 1].offset + len(items[k - 1].text):it.offset]
            if run[-1] != k - 1 or any(ln.strip() == "" for ln in gap.split("\n")[:-1]):
                flush()
        run.append(k)
    flush()


# ---------------------------------------------------------------- one item
def format_item(item: A.Item) -> str:
    """The item's text in the canonical layout; the item unchanged when it has an error."""
    text = item.text
    if item.syntax_errors or getattr(item, "layout_errors", None) or "\t" in text or "\f" in text \
            or text.startswith(BOM):
        return text
    toks, problems = tokenize(text)
    if problems:
        return text
    try:
        out = _render(text, toks)
    except Exception:  # a formatter bug must not lose the user's text
        return text
    if not _same_tokens(text, out):
        return text
    return out


def _same_tokens(a: str, b: str) -> bool:
    ta, pa = tokenize(a)
    tb, pb = tokenize(b)
    if pa or pb:
        return False
    key = [(t.type, t.value) for t in ta if t.type not in LAYOUT]
    return key == [(t.type, t.value) for t in tb if t.type not in LAYOUT] and \
        COMMENT.findall(_strip_strings(a)) == COMMENT.findall(_strip_strings(b)) and \
        [(t.type) for t in ta] == [(t.type) for t in tb]


def _strip_strings(s: str) -> str:
    return re.sub(r'"[^"\n]*"', '""', s)


class _Tok:
    __slots__ = ("type", "value", "start", "end", "depth", "pattern", "brackets", "unary", "kwarg_eq")

    def __init__(self, t, depth):
        self.type, self.value, self.start, self.end = t.type, t.value, t.start_pos, t.end_pos
        self.depth = depth  # the block depth of its line
        self.pattern = False  # inside an axis pattern
        self.brackets = ()  # the brackets open before it: "(" or "["
        self.unary = False
        self.kwarg_eq = False


def _annotate(toks) -> list:
    """The real tokens, each with its block depth, the brackets open before it, and
    whether it is in a pattern, a unary operator, a keyword argument's `=`."""
    out: list = []
    depth = 0
    stack: list = []  # (bracket char, pattern kind or None)
    pattern_at = None  # (stack depth, "einsum" | "arrow")
    for t in toks:
        if t.type == "_INDENT":
            depth += 1
            continue
        if t.type == "_DEDENT":
            depth -= 1
            continue
        if t.type == "_NL":
            continue
        if t.type == "PSTART":
            kind = "einsum" if out and out[-1].type == "COLON" else "arrow"
            pattern_at = (len(stack), kind)
            continue
        if pattern_at is not None:
            level, kind = pattern_at
            if len(stack) < level or (t.type == "COMMA" and len(stack) == level and kind == "arrow"):
                pattern_at = None
        k = _Tok(t, depth)
        k.brackets = tuple(b for b, _ in stack)
        k.pattern = pattern_at is not None and t.type != "COMMA" if pattern_at is not None else False
        if pattern_at is not None and t.type == "COMMA":
            k.pattern = True
        prev = out[-1] if out else None
        if t.type in ("MINUS", "BANG") and (prev is None or prev.type not in OPERAND_END):
            k.unary = True
        if t.type == "EQUAL" and stack and stack[-1][0] == "(" and prev is not None and prev.type == "NAME" \
                and len(out) >= 2 and out[-2].type in ("LPAR", "COMMA"):
            k.kwarg_eq = True
        if t.type in ("LPAR", "LSQB"):
            stack.append((t.value, None))
        elif t.type in ("RPAR", "RSQB") and stack:
            stack.pop()
            if pattern_at is not None and len(stack) < pattern_at[0]:
                pattern_at = None
        out.append(k)
    return out


def _space(prev: _Tok, t: _Tok, first: _Tok) -> str:
    """The space between two tokens on one line."""
    p, n = prev.type, t.type
    in_size = "[" in t.brackets and not t.pattern  # sizes: a `[` holds no call
    if p in ("LPAR", "LSQB", "DOT") or n in ("RPAR", "RSQB", "COMMA", "COLON", "DOT"):
        return ""
    if p == "AT" and prev is first:
        return ""  # a decorator
    if prev.unary:
        return ""
    if t.kwarg_eq or prev.kwarg_eq:
        return ""
    if n == "LPAR":
        if t.pattern or in_size:
            return "" if p in ("LPAR", "LSQB") else " "
        return "" if p in ("NAME", "RPAR", "RSQB") else " "
    if n == "LSQB":
        return "" if p in ("NAME", "RPAR", "RSQB") else " "
    if in_size and (n in BINARY or p in BINARY) and n != "ARROW" and p != "ARROW":
        return ""
    return " "


def _render(text: str, raw) -> str:
    toks = _annotate(raw)
    if not toks:
        return text
    # logical lines: a token after a line break, outside brackets, not a `|>`
    stmts: list = []
    for i, t in enumerate(toks):
        gap = text[toks[i - 1].end:t.start] if i else ""
        if i == 0 or ("\n" in gap and not t.brackets and t.type != "PIPE"):
            stmts.append([])
        stmts[-1].append(i)
    out: list = []
    for s in stmts:
        out.append(_render_stmt(text, toks, s, broken=None))
    body = "".join(out)
    tail = text[toks[-1].end:]
    body += _trailing(tail, toks[-1].depth)
    return body


def _trailing(tail: str, depth: int) -> str:
    """The comments after the item's last token: one on its line, others below."""
    lines = tail.split("\n")
    out = ""
    first = lines[0].strip()
    if first:
        out += "  " + first
    out += "\n"
    rest = [ln.strip() for ln in lines[1:]]
    while rest and rest[-1] == "":
        rest.pop()
    rest = _collapse(rest)
    for ln in rest:
        out += (INDENT * depth + ln if ln else "") + "\n"
    return out


def _render_stmt(text: str, toks: list, idx: list, broken) -> str:
    first = toks[idx[0]]
    top_pipes = [i for i in idx if toks[i].type == "PIPE" and not toks[i].brackets]
    if broken is None:
        broken = bool(top_pipes) and any("\n" in text[toks[i - 1].end:toks[i].start] for i in top_pipes)
        if top_pipes and not broken:
            one = _render_stmt(text, toks, idx, broken=False)
            if max(len(ln) for ln in one.split("\n")) > MAX_WIDTH:
                broken = True
            else:
                return one
    base = first.depth
    parts = [INDENT * base]
    piped = 0
    for j, i in enumerate(idx):
        t = toks[i]
        if j:
            prev = toks[i - 1]
            gap = text[prev.end:t.start]
            newline = "\n" in gap or (broken and t.type == "PIPE" and not t.brackets)
            if t.type == "PIPE" and not t.brackets and broken:
                piped = 1
            if newline:
                level = base + piped + len(t.brackets) - (1 if t.type in ("RPAR", "RSQB") else 0)
                if t.type == "PIPE" and not t.brackets:
                    level = base + 1
                indent = INDENT * level
                parts.append(_break(gap, indent))
                parts.append(indent)
            else:
                parts.append(_space(prev, t, first))
        parts.append(t.value)
    # the comment after the statement's last token, before the next statement
    nxt = idx[-1] + 1
    if nxt < len(toks):
        gap = text[toks[idx[-1]].end:toks[nxt].start]
        parts.append(_break(gap, INDENT * toks[nxt].depth, last=True))
    return "".join(parts)


def _break(gap: str, indent: str, last: bool = False) -> str:
    """A line break in a gap: its comment on the line before, the comment lines and (at
    most one) blank line between. With `last`, the text up to the next statement's
    indentation (not included)."""
    lines = gap.split("\n")
    out = ""
    first = lines[0].strip()
    if first:
        out += "  " + first
    out += "\n"
    middle = _collapse([ln.strip() for ln in lines[1:-1]])
    for ln in middle:
        out += (indent + ln if ln else "") + "\n"
    return out


# ---------------------------------------------------------------- Markdown
FENCE = re.compile(r"^(?P<indent>[ \t]*)```shapescript[ \t]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)


def format_markdown(text: str) -> str:
    """Every ```shapescript code block of a Markdown text formatted (a block indented
    with its fence, in a list item, is formatted as the code it shows)."""
    def one(m):
        indent, body = m.group("indent"), m.group("body")
        lines = body.split("\n")
        if any(ln and not ln.startswith(indent) for ln in lines):
            return m.group(0)
        code = "\n".join(ln[len(indent):] for ln in lines)
        new = format_text(code)
        if new == code:
            return m.group(0)
        body = "".join((indent + ln if ln else "") + "\n" for ln in new.split("\n")[:-1])
        return f"{indent}```shapescript\n{body}{indent}```"
    return FENCE.sub(one, text)
