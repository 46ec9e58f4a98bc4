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
