"""Axis patterns: matching by position, renaming, groups, E0405–E0408 and E0410."""
import pytest

from support import carets, check, errors

PRE = """dim D = 768
dim H = 12
dim Dh = D / H
dim K = 10
dim Hkv = 4
dim G = H / Hkv
"""


def fn(sig: str, body: str) -> str:
    return PRE + f"\nfn f({sig}:\n" + "".join(f"    {l}\n" for l in body.strip().split("\n"))


@pytest.mark.parametrize("sig,body", [
    ("x: [b n D]) -> [b H n Dh]", "return x |> rearrange(b n (H Dh) -> b H n Dh)"),
    ("x: [b H n Dh]) -> [b n D]", "return x |> rearrange(b H n Dh -> b n (H Dh))"),
    ("x: [b n D]) -> [b n D]", "return x |> rearrange(s t (H Dh) -> s t (H Dh))"),  # renames
    ("x: [b n 3*D]) -> [b H n Dh]", "q, k, v = x |> split(b n (3 H Dh) -> b H n Dh)\nreturn q + k + v"),
    ("x: [b Hkv n Dh]) -> [b H n Dh]", "return x |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)"),
    ("x: [b n D]) -> [b n H Dh]", "return x |> rearrange(b n (H d) -> b n H d)"),  # d inferred = Dh
    ("q: [b H n Dh], k: [b H n Dh]) -> [b H n n]", "return einsum(q, k: b H n Dh, b H m Dh -> b H n m)"),
    ("x: [b n D]) -> [b n]", "return einsum(x, x: b n D, b n D -> b n)"),
])
def test_patterns_that_check(sig, body):
    assert errors(fn(sig, body)) == []


def test_renamed_axis_is_a_new_name_with_the_same_size():
    src = fn("q: [b H n Dh], k: [b H n Dh], v: [b H n Dh]) -> [b H n Dh]", """
att = einsum(q, k: b H n Dh, b H m Dh -> b H n m) |> masked_fill(!causal[n m], -inf) |> softmax(over=m)
return einsum(att, v: b H n m, b H m Dh -> b H n Dh)""")
    ws, diags = check(src)
    assert [d.code for d in diags if d.severity == 1] == []
    res = ws.analyze("/tmp/shapescript-test/case.ss").fns["f"]
    att = [t for n, _, t in res.locals_at if n == "att"][0]
    assert ws.analyze("/tmp/shapescript-test/case.ss").env.render(att) == "[b H n m]"


def test_e0408_known_name_in_the_wrong_place_versus_a_rename():
    # `m` names att's 4th axis, so writing it 3rd is misplacing it (E0408) ...
    expected, got = carets(PRE + """
fn f(att: [b H n m], v: [b H m Dh]) -> [b H n Dh]:
    return einsum(att, v: b H m n, b H m Dh -> b H n Dh)
#                         ^^^^^^^ E0408
""")
    assert expected == got
    # ... while a name the tensor doesn't have renames its axis: no error
    assert errors(fn("att: [b H n m]) -> [b H s t]", "return att |> rearrange(b H s t -> b H s t)")) == []


def test_e0408_headline_counts_from_one():
    ws, diags = check(fn("x: [b n D]) -> [b n D]", "return x |> rearrange(b D n -> b n D)"))
    assert [d.message for d in diags] == ["the pattern calls axis 2 `D`, but `D` is axis 3"]


def test_e0408_with_a_dim_at_the_wrong_place():
    assert errors(fn("x: [b H n Dh]) -> [b H n Dh]", "return x |> rearrange(b n H Dh -> b H n Dh)")) \
        == [("E0408", 9)]


@pytest.mark.parametrize("sig,body,code", [
    ("x: [b n D]) -> [b n]", "return x |> rearrange(b n D -> b n)", "E0405"),
    ("x: [b n D]) -> [b n D z]", "return x |> rearrange(b n D -> b n D z)", "E0405"),
    ("x: [b n D]) -> [b K n Dh]", "return x |> rearrange(b n (K Dh) -> b K n Dh)", "E0406"),
    ("x: [b n D]) -> [b n D]", "return x |> rearrange(b n (h d) -> b n (h d))", "E0406"),
    ("x: [b n D]) -> [b n D]", "return x |> rearrange(b n H Dh -> b n H Dh)", "E0407"),
    ("x: [b n D]) -> [b n D]", "return x |> rearrange(b D -> b D)", "E0407"),
    ("x: [b n D]) -> [b n 7 D]", "return x |> rearrange(b n (7 d) -> b n 7 d)", "E0406"),
    ("x: [b n D], w: [D 3*D]) -> [b H n Dh]", "q, k = x @ w |> split(b n (3 H Dh) -> b H n Dh)\nreturn q", "E0411"),
    ("x: [b n D]) -> [b n D]", "return x |> rearrange(b n K -> b n K)", "E0401"),
    ("a: [b D], c: [b Dh]) -> [b]", "return einsum(a, c: b k, b k -> b)", "E0410"),
    ("a: [b D]) -> [b D z]", "return einsum(a, a: b D, b D -> b D z)", "E0410"),
    ("x: [b n D]) -> [b n D]", "return x |> repeat(b n D -> b n D w)", "E0405"),
])
def test_pattern_errors(sig, body, code):
    got = errors(fn(sig, body))
    assert [c for c, _ in got] == [code]


def test_pattern_bound_names_are_size_variables_for_later_use():
    src = fn("x: [b n D]) -> [b t D]", """
y = x |> rearrange(b t D -> b t D)
w = y |> softmax(over=t)
return w |> masked_fill(causal[t t] |> rearrange(s u -> s u) |> rearrange(s u -> s u), 0.0)""")
    # `t` is bound by the first pattern, so over=t and causal[t t] resolve; `s u` rename
    # the mask's axes, so the mask no longer aligns with `w` by name
    assert [c for c, _ in errors(src)] == ["E0412"]
