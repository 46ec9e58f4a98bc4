"""Hover, signature help and completion write a builtin's signature from the one table."""
import re

import pytest

from shapescript_core.check.builtins import BUILTINS
from shapescript_core.ide.completion import completions, signature_help
from shapescript_core.ide.hover import hover
from support import check

PATH = "/tmp/shapescript-test/case.ss"


def _call_source(name: str) -> str:
    b = BUILTINS[name]
    if b.name == "einsum":
        args = "x, x: n D, m D -> n m"
    elif b.pattern:
        args = "x, n D -> D n"
    else:
        args = ", ".join(["x"] * max(1, len(b.params)))
    return f"dim D = 4\nfn f(x: [n D]) -> [n D]:\n    y = {name}({args})\n    return x\n"


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_the_signature_reads_the_same_everywhere(name):
    src = _call_source(name)
    ws, _ = check(src)
    at = src.index(f"{name}(")
    h = hover(ws, PATH, at + 1)
    shown = re.match(r"```shapescript\n(.*?)\n```", h.markdown).group(1)
    s = signature_help(ws, PATH, at + len(name) + 2)
    assert s is not None
    comp = [c for c in completions(ws, PATH, at + 2) if c.label == name]
    assert shown == s.label == BUILTINS[name].signature
    assert comp and comp[0].detail == shown
    # each parameter's range in the label is that parameter's text
    texts = [t for _, t in BUILTINS[name].parts]
    assert [s.label[a:b] for a, b in s.params] == texts


def test_einsum_reads_as_a_call_is_written():
    assert BUILTINS["einsum"].signature == "einsum(a, b, …: La, Lb, … -> R)"
    assert BUILTINS["rearrange"].signature == "rearrange(x, L -> R)"
    assert BUILTINS["concat"].signature == "concat(a, b, …, over=A)"


def test_the_vscode_grammar_colours_every_builtin():
    """The TextMate grammar's builtin alternations (a call, and after `|>`) name exactly the
    builtin table's builtins: a new one (v0.3's softcap) is coloured as one."""
    import json
    import os
    import re
    from shapescript_core.check.builtins import BUILTINS
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "editors", "vscode", "syntaxes", "shapescript.tmLanguage.json"),
              encoding="utf-8") as fh:
        text = json.dumps(json.load(fh))
    found = re.findall(r"\(scaled_dot_product_attention\|([a-z_|]+)\)", text)
    assert len(found) == 2
    for alternation in found:
        assert sorted(["scaled_dot_product_attention"] + alternation.split("|")) == sorted(BUILTINS)
