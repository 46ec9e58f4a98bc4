"""Edits like real typing in the generated file (`gen.py`), for the latency benchmarks.

Each kind names a keystroke (or a paste, or a deleted line) at a place inside function
bodies; most leave the item unparseable until the next keystroke, as typing does. A
site's edit is followed by its undo, so the text returns to the valid file and every
kind starts from the same state.

An edit is `(start, end, new)`: replace `text[start:end]` with `new`.
"""
from __future__ import annotations

import re

# kind -> (regex of the site, group whose span is replaced, what replaces it); a list of
# replacements cycles over the sites
KINDS = {
    # a letter at the end of a name: `x` becomes the unknown `xs`
    "letter": (r"silu\(linear\(x()", 1, ["s", "e", "q"]),
    # a digit in a literal (the file stays valid)
    "digit": (r"eps=1e-(5)", 1, ["6"]),
    # an opening bracket in the middle of an expression
    "paren": (r"\* ()linear\(x, p\.w_up\)", 1, ["("]),
    "bracket": (r"\* ()linear\(x, p\.w_up\)", 1, ["["]),
    # a comma where the next argument is about to be typed
    "comma": (r"linear\(x()\, p\.w_up\)", 1, [","]),
    # an operator typed before its operand
    "operator": (r"return x \+ ()mlp\d+\(", 1, ["*", "@", "-", "/"]),
    "colon": (r"    return x()\ \+ mlp", 1, [":"]),
    # commenting a line out
    "hash": (r"\n    ()k = k \|> repeat", 1, ["# "]),
    # Enter at the end of a line (with the indent an editor adds), and inside an expression
    "newline": (r"    v = linear\(x, a\.wv\) \|> rearrange\(b n \(Hkv Dh\) -> b Hkv n Dh\)()\n", 1, ["\n    "]),
    "split": (r"    v = linear\(x, a\.wv\) \|> ()rearrange", 1, ["\n    "]),
    # a pasted line at the start of a body
    "paste": (r"-> \[b n D\]:\n()    x = x \+ attention", 1, ["    _pasted = x * 2.0 + x\n"]),
    # a deleted line
    "delete": (r"\n(    v = v \|> repeat\(b Hkv n Dh -> b \(Hkv G\) n Dh\)\n)", 1, [""]),
}


def sites(text: str, kind: str, count: int) -> list:
    """`count` edits of this kind spread over the file (fewer when there are fewer sites)."""
    pattern, group, news = KINDS[kind]
    found = [m.span(group) for m in re.finditer(pattern, text)]
    if not found:
        raise ValueError(f"no site for {kind!r} in the text")
    step = max(1, len(found) // max(1, count))
    picked = found[step // 2::step][:count]
    return [(a, b, news[k % len(news)]) for k, (a, b) in enumerate(picked)]


def apply(text: str, edit: tuple) -> tuple:
    """(new text, the edit that undoes this one)."""
    start, end, new = edit
    return text[:start] + new + text[end:], (start, start + len(new), text[start:end])


def typing_burst(text: str, k: int = 0) -> list:
    """20 keystrokes typing a new line into a body (the k-th `attention` body), one
    character each: the edits and the text before each."""
    m = [m for m in re.finditer(r"    v = linear\(x, a\.wv\) \|> rearrange\(b n \(Hkv Dh\) -> b Hkv n Dh\)",
                                text)]
    at = m[(len(m) // 2 + k) % len(m)].end()
    typed = "\n    _w = silu(x) + x"[:20]
    return [(at + i, at + i, ch) for i, ch in enumerate(typed)]
