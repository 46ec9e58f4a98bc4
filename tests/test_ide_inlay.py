"""Inlay hints in the core: the shape after each assignment."""
from __future__ import annotations

from ide_support import workspace
from shapescript_core.ide.inlay import inlay_hints

SRC = """\
    dim D  = 64
    dim H  = 4
    dim Dh = D / H

    fn f(x: [b n D], w: [D 3*D]) -> [b n D]:
        q, k, v = x @ w
            |> split(b n (3 H Dh) -> b H n Dh)$0
        att = einsum(q, k: b H n Dh, b H m Dh -> b H n m)
            |> softmax(over=m)$1
        mask = causal[n m]$2
        for_later = arange(n)$3
        bad = nope(x)
        return einsum(att, v: b H n m, b H m Dh -> b H n Dh) |> rearrange(b H n Dh -> b n (H Dh))
    """


def test_one_hint_at_the_end_of_each_assignment():
    ws, path, m = workspace(SRC)
    hints = {h.offset: h.label for h in inlay_hints(ws, path)}
    assert hints == {
        m[0]: "▸ [b H n Dh], [b H n Dh], [b H n Dh]",
        m[1]: "▸ [b H n m]",
        m[2]: "▸ [n m] bool",
        m[3]: "▸ [n] i64",
    }  # `bad` has no type: no hint


def test_hints_in_a_range_only_and_with_full_types_as_tooltips():
    ws, path, m = workspace(SRC)
    hints = inlay_hints(ws, path, m[1] - 5, m[2])
    assert [h.offset for h in hints] == [m[1], m[2]]
    assert hints[0].tooltip == "att: [b H n m] f32"


def test_no_hints_for_a_file_that_does_not_parse():
    ws, path, _ = workspace("fn f(\n")
    assert inlay_hints(ws, path) == []
