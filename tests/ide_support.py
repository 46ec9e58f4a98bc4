"""Fixtures for the IDE layer's tests: a source string with `$0` for the cursor (and
`$1` for an expected place), checked in a fresh workspace."""
from __future__ import annotations

import textwrap

from shapescript_core.workspace import Workspace

DIR = "/tmp/shapescript-ide-tests"


def marks(src: str):
    """(text, {mark: offset}) with the `$0`, `$1`, … marks taken out."""
    src = textwrap.dedent(src)
    found = {}
    while True:
        hits = [(src.index(f"${k}"), k) for k in range(10) if f"${k}" in src]
        if not hits:
            return src, found
        i, k = min(hits)
        found[k] = i
        src = src[:i] + src[i + 2:]


def workspace(main: str, **others):
    """(workspace, path of main.ss, {mark: offset}); `others` are more files by stem."""
    ws = Workspace()
    for stem, text in others.items():
        ws.set_text(f"{DIR}/{stem}.ss", textwrap.dedent(text))
    text, m = marks(main)
    path = f"{DIR}/main.ss"
    ws.set_text(path, text)
    return ws, path, m


def spans(src: str):
    """(text, [(start, end)]) with every ⟦marked⟧ span taken out of `src` (dedented);
    `$0` marks may be inside them."""
    src = textwrap.dedent(src)
    out = []
    text = ""
    i = 0
    while True:
        j = src.find("⟦", i)
        if j < 0:
            text += src[i:]
            break
        k = src.index("⟧", j)
        text += src[i:j]
        inner = src[j + 1:k]
        start = len(text.replace("$0", ""))
        text += inner
        out.append((start, start + len(inner.replace("$0", ""))))
        i = k + 1
    return text, out
