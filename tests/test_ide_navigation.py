"""Go to definition and the outline, in the core. `$0` is the cursor, `$1` where the
definition must be found."""
from __future__ import annotations

import pytest

from ide_support import DIR, marks, workspace
from shapescript_core.ide.navigation import definition, document_symbols

LIB = """\
    dim D  = 64
    dim $1H  = 4

    model Attn:
        wq: [D D]
    """

MAIN = """\
    import "lib.ss"

    model Net:
        attn: Attn
        layers: [2] Attn

    fn attend(a: Attn, x: [b n D]) -> [b n D]:
        return linear(x, a.wq)

    fn encode(m: Net, x: [b n D]) -> [b n D]:
        y = attend(m.attn, x)
        for layer in m.layers:
            y = attend(layer, y)
        return y + scale(y, H)
    """

SAME_FILE = [
    ("attend($0m.attn", "fn encode($1m: Net"),  # a parameter
    ("return $0y + scale", "        $1y = attend(layer, y)"),  # the last binding before the use
    ("attend($0layer, y)", "for $1layer in"),  # a loop variable
    ("$0attend(m.attn", "fn $1attend(a"),  # a function
    ("m.$0attn, x", "$1attn: Attn\n        layers"),  # a field of a model of this file
    ("fn encode(m: $0Net", "model $1Net:"),  # a model
    ("-> [$0b n D]:\n        return linear", "attend(a: Attn, x: [$1b"),  # a size variable
]


@pytest.mark.parametrize("use,target", SAME_FILE, ids=[u for u, _ in SAME_FILE])
def test_definition_in_the_file(use, target):
    text = MAIN.replace(use.replace("$0", ""), use, 1).replace(target.replace("$1", ""), target, 1)
    ws, path, m = workspace(text, lib=LIB)
    locs = definition(ws, path, m[0])
    assert [(loc.path, loc.start) for loc in locs] == [(path, m[1])]


@pytest.mark.parametrize("use,name", [("scale(y, $0H)", "H"), ("a: $0Attn", "Attn"), ("a.$0wq", "wq"),
                                      ("encode(m: Net, x: [b n $0D])", "D")])
def test_definition_across_an_import(use, name):
    text = MAIN.replace(use.replace("$0", ""), use, 1)
    ws, path, m = workspace(text, lib=LIB.replace("$1", ""))
    (loc,) = definition(ws, path, m[0])
    lib_text = ws.file(f"{DIR}/lib.ss").text
    assert loc.path == f"{DIR}/lib.ss" and lib_text[loc.start:loc.end] == name


def test_definition_of_an_import_is_the_file():
    ws, path, m = workspace(MAIN.replace('"lib.ss"', '"li$0b.ss"'), lib=LIB)
    (loc,) = definition(ws, path, m[0])
    assert (loc.path, loc.start) == (f"{DIR}/lib.ss", 0)


def test_no_definition_for_builtins_numbers_or_nothing():
    for use in ("return $0linear", "for layer in m.layers:$0", "    $0"):
        text = MAIN.replace(use.replace("$0", ""), use, 1)
        ws, path, m = workspace(text, lib=LIB)
        assert definition(ws, path, m[0]) == []


def test_outline():
    ws, path, _ = workspace(MAIN, lib=LIB)
    syms = document_symbols(ws, path)
    assert [(s.name, s.kind, s.detail) for s in syms] == [
        ("lib.ss", "import", "import"), ("Net", "model", ""),
        ("attend", "fn", "(a: Attn, x: [b n D]) -> [b n D]"), ("encode", "fn", "(m: Net, x: [b n D]) -> [b n D]")]
    assert [(c.name, c.detail) for c in syms[1].children] == [("attn", "Attn"), ("layers", "[2] Attn")]
    text = ws.file(path).text
    assert text[syms[2].sel_start:syms[2].sel_end] == "attend"
    assert text[syms[2].start:syms[2].end].startswith("fn attend") and text[syms[2].start:syms[2].end].endswith("a.wq)")


def test_outline_keeps_broken_items_by_their_declared_kind():
    ws, path, _ = workspace("dim D = 4\nfn broken(x: [b D]) -> :\n    return x\nmodel M:\n    w: [D]\n")
    assert [(s.name, s.kind) for s in document_symbols(ws, path)] == [("D", "dim"), ("broken", "fn"), ("M", "model")]


def test_marks_helper():
    assert marks("a$0b$1c") == ("abc", {0: 1, 1: 2})
