"""Everything from outside (the source's names, comments and text, its file name, the
output path, the checkpoint) reaches a generated file only through these functions: one
per format. The text is data there, never code.

- Python: `py_str` (a string literal, `repr`), `py_docstring` (a docstring literal),
  `py_comment` (the text of a `#` comment: one line), `py_float` (a finite float
  literal; a non-finite one is an error before anything is written);
- TOML: `toml_str` (a basic string);
- JSON: `json_text` (the whole document);
- shell and Markdown: `shell_arg` (one argument, `shlex.quote`), `md_code` (inline code).

`shown` makes any text printable on one line: control characters, line and paragraph
separators and other invisible characters become `\\xNN` / `\\uNNNN` escapes; it is the
basis of comments and docstrings.
"""
from __future__ import annotations

import json
import math
import shlex
import unicodedata


class EscapeError(ValueError):
    """A value that can't be written into a generated file (a non-finite number)."""


def _visible(ch: str) -> bool:
    if ch == " ":
        return True
    cat = unicodedata.category(ch)
    # C*: control, format, surrogate, private use, unassigned; Z* but the space: line and
    # paragraph separators and odd spaces
    return cat[0] not in "CZ"


def _escape_char(ch: str) -> str:
    o = ord(ch)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def shown(text: str) -> str:
    """`text` on one line with every invisible character escaped (a tab too)."""
    text = str(text)
    if text.isprintable() and all(_visible(ch) for ch in text):
        return text
    return "".join(ch if _visible(ch) else _escape_char(ch) for ch in text)


def py_comment(text: str) -> str:
    """The text of a Python comment (after `# `): one line, whatever `text` holds. Runs of
    whitespace, line breaks included, become one space; other invisible characters are
    escaped."""
    return shown(" ".join(str(text).split()))


def py_str(value: str) -> str:
    """A Python string literal whose value is `value`."""
    return repr(str(value))


def py_docstring(text: str) -> str:
    """A Python docstring literal whose value is `text`: triple-quoted when that holds it
    as it is, else `repr`."""
    text = str(text)
    plain = all(ch == "\n" or _visible(ch) for ch in text)
    if plain and '"""' not in text and "\\" not in text and not text.endswith('"') and not text.startswith('"'):
        return f'"""{text}"""'
    return repr(text)


def py_float(value, what: str = "a number") -> str:
    """A finite float literal; EscapeError when `value` is inf or nan."""
    v = float(value)
    if not math.isfinite(v):
        raise EscapeError(f"{what} is {value!r}, not a finite number: a generated model can't hold it")
    return repr(v)


def py_number(value, what: str = "a number") -> str:
    """An int or finite float literal."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return repr(value)
    return py_float(value, what)


def py_value(value, what: str = "a value") -> str:
    """A config value as a Python literal: numbers (finite), strings (escaped), None, and
    lists and dicts of those (layer_types, rope_parameters)."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_value(v, what) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_str(str(k))}: {py_value(v, what)}" for k, v in value.items()) + "}"
    return py_number(value, what)


def toml_str(value: str) -> str:
    """A TOML basic string whose value is `value` (JSON's escapes are TOML's, but TOML
    refuses raw control characters and DEL, which json.dumps leaves in)."""
    out = []
    for ch in str(value):
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:  # a lone surrogate: TOML can't hold it
            out.append("\\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def json_text(value, indent: int = 2) -> str:
    """A JSON document (strings escaped, non-finite numbers refused)."""
    try:
        return json.dumps(value, indent=indent, allow_nan=False) + "\n"
    except ValueError as e:
        raise EscapeError(f"a value can't be written as JSON: {e}") from e


def shell_arg(value: str) -> str:
    """One shell word whose value is `value`."""
    return shlex.quote(str(value))


def md_code(text: str) -> str:
    """Inline Markdown code showing `text` on one line (backticks fenced by longer runs)."""
    t = shown(text)
    run, longest = 0, 0
    for ch in t:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"
