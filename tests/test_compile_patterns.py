"""Every pattern form of LANGUAGE.md §5.1 and name-based broadcasting (§3.2), compiled to
PyTorch and run against hand-written torch (reshape / permute / expand, no einops).

As in test_compile_builtins.py, each case is one exported function of one program, and
all axis sizes differ (b=2 n=5 m=7 s=13, Hkv=3 G=4 Dh=6 D=8 Dv=9 F=11 H=12), so that a
wrong permutation, grouping or broadcast cannot pass by accident.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from compile_support import DIMS, assert_matches, fn_name, program_of  # noqa: E402

HEADER = DIMS + """
model M:
    g: [D] = ones
    wf: [H Dh F]

fn heads(x: [b n H*Dh]) -> [b H n Dh]:
    return rearrange(x, b n (H Dh) -> b H n Dh)

fn merge_heads(m: M, x: [b H n Dh]) -> [b n H*Dh]:
    y = softmax(x, over=n)
    return rearrange(y, b H n Dh -> b n (H Dh))
"""

B, N, HKV, GR, HH, DH, D, F = 2, 5, 3, 4, 12, 6, 8, 11

REARRANGE = [
    ("transpose", "x: [b n D] -> [D b n]", "rearrange(x, b n D -> D b n)", lambda t: t["x"].permute(2, 0, 1)),
    ("swap_last", "x: [b n D] -> [b D n]", "x |> rearrange(b n D -> b D n)", lambda t: t["x"].transpose(1, 2)),
    ("merge", "x: [b H n Dh] -> [b n H*Dh]", "rearrange(x, b H n Dh -> b n (H Dh))",
     lambda t: t["x"].transpose(1, 2).reshape(B, N, HH * DH)),
    ("merge_inner_first", "x: [b H n Dh] -> [b n H*Dh]", "rearrange(x, b H n Dh -> b n (Dh H))",
     lambda t: t["x"].permute(0, 2, 3, 1).reshape(B, N, DH * HH)),
    ("merge_two_groups", "x: [b H n Dh] -> [b*n H*Dh]", "rearrange(x, b H n Dh -> (b n) (H Dh))",
     lambda t: t["x"].transpose(1, 2).reshape(B * N, HH * DH)),
    ("split_group", "x: [b n H*Dh] -> [b H n Dh]", "rearrange(x, b n (H Dh) -> b H n Dh)",
     lambda t: t["x"].reshape(B, N, HH, DH).transpose(1, 2)),
    ("split_group_inferred", "x: [b n H*Dh] -> [b H n Dh]", "rearrange(x, b n (H e) -> b H n e)",
     lambda t: t["x"].reshape(B, N, HH, DH).transpose(1, 2)),
    ("regroup", "x: [b n H*Dh] -> [b n Dh*H]", "rearrange(x, b n (H Dh) -> b n (Dh H))",
     lambda t: t["x"].reshape(B, N, HH, DH).transpose(2, 3).reshape(B, N, DH * HH)),
    ("split_three", "x: [b n H*Dh] -> [Dh b Hkv n G]", "rearrange(x, b n (Hkv G Dh) -> Dh b Hkv n G)",
     lambda t: t["x"].reshape(B, N, HKV, GR, DH).permute(4, 0, 2, 1, 3)),
    ("renamed_then_reduced", "x: [b n D] -> [b D]", "y = rearrange(x, b k D -> b D k)\nsum(softmax(y, over=k), over=k)",
     lambda t: t["x"].transpose(1, 2).softmax(-1).sum(-1)),
    ("renamed_in_group", "x: [b n D] -> [D b*n]", "rearrange(x, r k D -> D (r k))",
     lambda t: t["x"].permute(2, 0, 1).reshape(D, B * N)),
    ("square_transposed", "x: [b n n] -> [b n n]", "y = rearrange(x, b i j -> b j i)\ny - softmax(y, over=j)",
     lambda t: t["x"].transpose(1, 2) - t["x"].transpose(1, 2).softmax(1)),
    ("literal_one_new", "x: [b n D] -> [b 1 n D]", "rearrange(x, b n D -> b 1 n D)", lambda t: t["x"][:, None]),
    ("literal_one_first", "x: [b n D] -> [1 b n D]", "rearrange(x, b n D -> 1 b n D)", lambda t: t["x"][None]),
    ("literal_one_last", "x: [b n D] -> [D n b 1]", "rearrange(x, b n D -> D n b 1)",
     lambda t: t["x"].permute(2, 1, 0)[..., None]),
    ("literal_one_dropped", "x: [b 1 n D] -> [n b D]", "rearrange(x, b 1 n D -> n b D)",
     lambda t: t["x"][:, 0].transpose(0, 1)),
    ("literal_one_moved", "x: [b 1 n D] -> [b n 1 D]", "rearrange(x, b 1 n D -> b n 1 D)",
     lambda t: t["x"].transpose(1, 2)),
    ("literal_one_in_group", "x: [b n D] -> [b n D]", "rearrange(x, b n D -> b (n 1) D)", lambda t: t["x"]),
    ("literal_one_with_merge", "x: [b n 1 D] -> [b D*n]", "rearrange(x, b n 1 D -> b (D n))",
     lambda t: t["x"][:, :, 0].transpose(1, 2).reshape(B, D * N)),
]

SPLIT = [
    ("split_two", "x: [b n 2*D] -> [b n D]", "a, c = split(x, b n (2 D) -> b n D)\na - square(c)",
     lambda t: t["x"][..., :D] - t["x"][..., D:].square()),
    ("split_two_middle", "x: [b 2*D n] -> [n b D]", "a, c = split(x, b (2 D) n -> n b D)\na * 3.0 + c",
     lambda t: (t["x"][:, :D] * 3.0 + t["x"][:, D:]).permute(2, 0, 1)),
    ("split_three_heads", "x: [b n 3*H*Dh] -> [b H n Dh]",
     "q, k, v = x |> split(b n (3 H Dh) -> b H n Dh)\nq + 2.0 * k + 4.0 * v",
     lambda t: sum(w * t["x"].reshape(B, N, 3, HH, DH)[:, :, i].transpose(1, 2)
                   for i, w in enumerate((1.0, 2.0, 4.0)))),
    ("split_three_to_group", "x: [n b 3*H*Dh] -> [b n Dh*H]",
     "q, k, v = split(x, n b (3 H e) -> b n (e H))\nq - 2.0 * k + v * v",
     lambda t: (lambda p: p[0] - 2.0 * p[1] + p[2] * p[2])(
         [t["x"].reshape(N, B, 3, HH, DH)[:, :, i].permute(1, 0, 3, 2).reshape(B, N, DH * HH) for i in range(3)])),
    ("split_three_first_axis", "x: [3*b n D] -> [n D b]", "p, q, r = split(x, (3 b) n D -> n D b)\np + q * r",
     lambda t: (t["x"][:B] + t["x"][B:2 * B] * t["x"][2 * B:]).permute(1, 2, 0)),
]

REPEAT = [
    ("repeat_new_axis", "x: [n D] -> [n F D]", "repeat(x, n D -> n F D)",
     lambda t: t["x"][:, None, :].expand(N, F, D)),
    ("repeat_new_axis_first", "x: [b n D] -> [G b n D]", "repeat(x, b n D -> G b n D)",
     lambda t: t["x"][None].expand(GR, B, N, D)),
    ("repeat_new_axis_transposed", "x: [b n D] -> [D G n b]", "repeat(x, b n D -> D G n b)",
     lambda t: t["x"].permute(2, 1, 0)[:, None].expand(D, GR, N, B)),
    ("repeat_in_group", "x: [b Hkv n Dh] -> [b H n Dh]", "repeat(x, b Hkv n Dh -> b (Hkv G) n Dh)",
     lambda t: t["x"].repeat_interleave(GR, dim=1)),
    ("repeat_in_group_outer", "x: [b Hkv n Dh] -> [b H n Dh]", "repeat(x, b Hkv n Dh -> b (G Hkv) n Dh)",
     lambda t: t["x"].repeat(1, GR, 1, 1)),
    ("repeat_in_group_moved", "x: [b Hkv n Dh] -> [b n H*Dh]", "repeat(x, b Hkv n Dh -> b n (Hkv G Dh))",
     lambda t: t["x"].repeat_interleave(GR, dim=1).transpose(1, 2).reshape(B, N, HH * DH)),
    ("repeat_renamed", "x: [b n D] -> [b k F D]", "repeat(x, b k D -> b k F D)",
     lambda t: t["x"][:, :, None].expand(B, N, F, D)),
    ("repeat_group_outer_first", "x: [n D] -> [G*n D]", "repeat(x, n D -> (G n) D)", lambda t: t["x"].repeat(GR, 1)),
    ("repeat_group_inner_last", "x: [n D] -> [n D*G]", "repeat(x, n D -> n (D G))",
     lambda t: t["x"].repeat_interleave(GR, dim=1)),
    ("repeat_literal_one_new", "x: [b n D] -> [b 1 n G D]", "repeat(x, b n D -> b 1 n G D)",
     lambda t: t["x"][:, None, :, None].expand(B, 1, N, GR, D)),
    ("repeat_literal_one_dropped", "x: [b 1 D] -> [b G D]", "repeat(x, b 1 D -> b G D)",
     lambda t: t["x"].expand(B, GR, D)),
    ("repeat_from_group", "x: [b n Hkv*Dh] -> [b H n Dh]", "repeat(x, b n (Hkv Dh) -> b (Hkv G) n Dh)",
     lambda t: t["x"].reshape(B, N, HKV, DH).transpose(1, 2).repeat_interleave(GR, dim=1)),
]

EINSUM = [
    ("einsum_scores_renamed", "q: [b H n Dh], k: [b H m Dh] -> [b H n m]",
     "einsum(q, k: b H n Dh, b H m Dh -> b H n m)", lambda t: t["q"] @ t["k"].transpose(-1, -2)),
    ("einsum_rename_same_size", "q: [b H n Dh] -> [b H n n2]",
     "einsum(q, q: b H n Dh, b H n2 Dh -> b H n n2)", lambda t: t["q"] @ t["q"].transpose(-1, -2)),
    ("einsum_values", "a: [b H n m], v: [b H m Dv] -> [b n H Dv]",
     "einsum(a, v: b H n m, b H m Dv -> b n H Dv)", lambda t: (t["a"] @ t["v"]).transpose(1, 2)),
    ("einsum_three", "x: [b n D], w: [D F], c: [b F] -> [n b]",
     "einsum(x, w, c: b n D, D F, b F -> n b)", lambda t: ((t["x"] @ t["w"]) * t["c"][:, None]).sum(-1).T),
    ("einsum_three_permuted", "x: [D b n], w: [F D], c: [F n] -> [b F]",
     "einsum(x, w, c: D b n, F D, F n -> b F)",
     lambda t: ((t["w"] @ t["x"].reshape(D, B * N)).reshape(F, B, N) * t["c"][:, None]).sum(-1).T),
    ("einsum_group_input", "x: [b n H*Dh] -> [b n F]",
     "einsum(x, m.wf: b n (H Dh), H Dh F -> b n F)", lambda t: t["x"] @ t["m.wf"].reshape(HH * DH, F)),
    ("einsum_group_output", "x: [b n D], w: [D H Dh] -> [b n H*Dh]",
     "einsum(x, w: b n D, D H Dh -> b n (H Dh))", lambda t: t["x"] @ t["w"].reshape(D, HH * DH)),
    ("einsum_groups_both", "x: [b n H*Dh] -> [b H*n]",
     "einsum(x, m.wf, m.g: b n (H Dh), H Dh F, D -> b (H n))",
     lambda t: (t["x"].reshape(B, N, HH, DH).transpose(1, 2) * t["m.wf"].sum(-1)[None, :, None, :]).sum(-1)
     .reshape(B, HH * N) * t["m.g"].sum()),
    ("einsum_renamed_masked", "x: [b n D] -> [b n k]",
     "s = einsum(x, x: b n D, b k D -> b n k)\nmasked_fill(s, !causal[n k], 0.0) |> softmax(over=n)",
     lambda t: (t["x"] @ t["x"].transpose(1, 2)).masked_fill(~torch.ones(N, N, dtype=torch.bool).tril(), 0.0)
     .softmax(1)),
    ("einsum_literal_one_in", "x: [b 1 D], w: [D F] -> [F b]", "einsum(x, w: b 1 D, D F -> F b)",
     lambda t: (t["x"][:, 0] @ t["w"]).T),
    ("einsum_literal_one_out", "x: [b n D], w: [D F] -> [b 1 F]", "einsum(x, w: b n D, D F -> b 1 F)",
     lambda t: (t["x"] @ t["w"]).sum(1, keepdim=True)),
    ("einsum_transpose_only", "x: [b n D] -> [D b n]", "einsum(x: b n D -> D b n)",
     lambda t: t["x"].permute(2, 0, 1)),
    ("einsum_sum_axis", "x: [b n D], y: [n D] -> [b]", "einsum(x, y: b n D, n D -> b)",
     lambda t: (t["x"] * t["y"]).sum((1, 2))),
]

BROADCAST = [
    ("bc_last_axis", "x: [b n D] -> [b n D]", "x * m.g", lambda t: t["x"] * t["m.g"]),
    ("bc_last_axis_first", "x: [b n D] -> [b n D]", "m.g - x", lambda t: t["m.g"] - t["x"]),
    ("bc_scores_mask", "x: [b H n m], y: [n m] -> [b H n m]", "x + y", lambda t: t["x"] + t["y"]),
    ("bc_leading_axes", "x: [b n D], y: [b n] -> [b n D]", "x * y", lambda t: t["x"] * t["y"][..., None]),
    ("bc_middle_axis", "x: [b n D], y: [n] -> [b n D]", "x / (y * y + 1.0)",
     lambda t: t["x"] / (t["y"] * t["y"] + 1.0)[:, None]),
    ("bc_first_axis", "x: [b n D], y: [b] -> [b n D]", "y + x", lambda t: t["y"][:, None, None] + t["x"]),
    ("bc_other_order", "x: [b n D], y: [D b] -> [b n D]", "x - y", lambda t: t["x"] - t["y"].T[:, None, :]),
    ("bc_other_order_first", "y: [D b], x: [b n D] -> [b n D]", "y - x",
     lambda t: t["y"].T[:, None, :] - t["x"]),
    # the same axes in two orders: the checker gives the result the right operand's order
    ("bc_same_axes_permuted", "x: [b n D], y: [n D b] -> [n D b]", "x * y",
     lambda t: t["x"].permute(1, 2, 0) * t["y"]),
    ("bc_heads", "x: [b H n Dh], y: [H Dh] -> [b H n Dh]", "x + y",
     lambda t: t["x"] + t["y"][:, None, :]),
    ("bc_heads_permuted", "x: [b H n Dh], y: [Dh b] -> [b H n Dh]", "x * y",
     lambda t: t["x"] * t["y"].T[:, None, None, :]),
    ("bc_repeated_names", "x: [b n n], y: [n n] -> [b n n]", "x + y", lambda t: t["x"] + t["y"]),
    ("bc_repeated_names_first", "y: [n n], x: [b n n] -> [b n n]", "y * x", lambda t: t["y"] * t["x"]),
    ("bc_repeated_names_split", "x: [n b n], y: [n n] -> [n b n]", "x - y",
     lambda t: t["x"] - t["y"][:, None, :]),
    ("bc_repeated_with_other", "x: [n n D], y: [D] -> [n n D]", "x * y", lambda t: t["x"] * t["y"]),
    ("bc_pow", "x: [b n D], y: [n D] -> [b n D]", "abs(x) ** y", lambda t: t["x"].abs() ** t["y"]),
    ("bc_compare_where", "x: [b n D], y: [D n] -> [b n D]", "where(x > y, x, y)",
     lambda t: torch.maximum(t["x"], t["y"].T)),
    ("bc_mask_logic", "x: [b n D], p: [b D] bool, q: [D] bool -> [b n D]",
     "masked_fill(x, p and !q, 0.0)", lambda t: t["x"].masked_fill((t["p"] & ~t["q"])[:, None], 0.0)),
    ("bc_mask_logic_or", "x: [b n D], p: [D b] bool, q: [b] bool -> [b n D]",
     "masked_fill(x, q or p, 1.5)", lambda t: t["x"].masked_fill((t["q"] | t["p"]).T[:, None, :], 1.5)),
    ("bc_scalars", "x: [b n D] -> [b n D]", "2.0 * x - 1.0 / D", lambda t: 2.0 * t["x"] - 1.0 / D),
    ("bc_unary_minus", "x: [b n D], y: [n D] -> [b n D]", "-x + -y", lambda t: -t["x"] - t["y"]),
    ("bc_chain", "x: [b n D], y: [b n], z: [D] -> [b n D]", "(x - y) * z + y",
     lambda t: (t["x"] - t["y"][..., None]) * t["z"] + t["y"][..., None]),
]

CALLS = [
    # patterns in the functions a case calls: a plain function, and one taking the model (a method of its class)
    ("calls", "x: [t s H*Dh] -> [t s H*Dh]", "merge_heads(m, heads(x))",
     lambda t: t["x"].reshape(17, 13, HH, DH).transpose(1, 2).softmax(2).transpose(1, 2).reshape(17, 13, HH * DH)),
]

PRECEDENCE = [
    # the generated code keeps only the parentheses Python needs: these must still mean the source
    ("prec_right_sub", "x: [b n D], y: [D], z: [n D] -> [b n D]", "x - (y - z) - y / (z * y)",
     lambda t: t["x"] - (t["y"] - t["z"]) - t["y"] / (t["z"] * t["y"])),
    ("prec_left_chain", "x: [b n D], y: [D] -> [b n D]", "(x - y) - (x / y) / y",
     lambda t: t["x"] - t["y"] - t["x"] / t["y"] / t["y"]),
    ("prec_unary_pow", "x: [b n D] -> [b n D]", "-x ** 2 + (-x) ** 3 - -(x + 1.0)",
     lambda t: -(t["x"] ** 2) + (-t["x"]) ** 3 + (t["x"] + 1.0)),
    ("prec_masks", "x: [b n D], y: [n D], p: [D] bool -> [b n D]",
     "masked_fill(x, x > 0.0 and y < 0.5 or !(p or y > 1.0), -1.0)",
     lambda t: t["x"].masked_fill(((t["x"] > 0) & (t["y"] < 0.5)) | ~(t["p"] | (t["y"] > 1.0)), -1.0)),
    ("prec_and_over_or", "x: [b n D], p: [D] bool, q: [n D] bool, r: [b n D] bool -> [b n D]",
     "masked_fill(x, p or q and r, 0.0) + masked_fill(x, (p or q) and r, 1.0)",
     lambda t: t["x"].masked_fill(t["p"] | (t["q"] & t["r"]), 0.0)
     + t["x"].masked_fill((t["p"] | t["q"]) & t["r"], 1.0)),
]

NAMES = [
    # source names that are Python's or the generated file's own
    ("name_keyword_param", "lambda: [b n D] -> [b n D]", "lambda * 2.0", lambda t: t["lambda"] * 2.0),
    ("name_modules", "x: [b n D] -> [b n D]", "math = x + 1.0\ntorch = math * 2.0\ntorch",
     lambda t: (t["x"] + 1.0) * 2.0),
    ("name_helper", "x: [b n D] -> [b n D]", "rms_norm = x * 2.0\nrms_norm(rms_norm, m.g, over=D)",
     lambda t: (lambda r: r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6) * t["m.g"])(t["x"] * 2.0)),
    ("name_of_a_dim", "x: [b n H*Dh] -> [b H n Dh]", "H = x * 2.0\nrearrange(H, b n (H Dh) -> b H n Dh)",
     lambda t: (t["x"] * 2.0).reshape(B, N, HH, DH).transpose(1, 2)),
]

CASES = REARRANGE + SPLIT + REPEAT + EINSUM + BROADCAST + PRECEDENCE + CALLS + NAMES


@pytest.fixture(scope="module")
def program():
    return program_of(HEADER, CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pattern(program, case):
    name, _, _, reference = case
    assert_matches(program.compile(fn_name(name)), reference)


STACKED = DIMS + """
dim L = 3

model Layer:
    w: [D D]
    g: [D] = ones

model Sub:
    w: [F D]
    b: [F]

model Net:
    layers: [L] Layer
    head: Sub
    gain: [D]

fn layer(l: Layer, x: [b n D]) -> [b n D]:
    h = rms_norm(x, l.g, over=D)
    return x + linear(h, l.w) |> gelu

fn act(x: [b n D], k: [] = 2.0, j: [] = 0.5) -> [b n D]:
    return x * k + j

fn project(s: Sub, x: [b n D]) -> [b n F]:
    return linear(x, s.w, s.b)

@export(hf)
fn f(m: Net, x: [b n D]) -> [b n F]:
    for l in m.layers:
        x = layer(l, x)
    y: [b n D] = act(x, j=1.5) * m.gain
    y = y |> act
    return project(m.head, y)
"""


def test_stacks_submodels_and_calls():
    """A stack looped over, a submodel's method, defaults skipped by a keyword, a pipe
    into a user function: the params reach each layer through the key map."""
    from compile_support import Program

    def reference(t):
        x = t["x"]
        for i in range(3):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * t[f"m.layers.{i}.g"]
            x = torch.nn.functional.gelu(x + h @ t[f"m.layers.{i}.w"].T)
        y = ((x * 2.0 + 1.5) * t["m.gain"]) * 2.0 + 0.5
        return y @ t["m.head.w"].T + t["m.head.b"]
    assert_matches(Program(STACKED).compile("f"), reference)
