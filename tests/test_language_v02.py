"""Language v0.2 (issue 21): `for i, layer in m.layers:`, compile-time values, `A if C else
B` (E0413) and `scaled_dot_product_attention(…, window=W)`: the checker's verdicts, the
hover's per-layer values, and what the reference evaluator and the compiled PyTorch compute
(held to a sliding-window attention written by hand)."""
from __future__ import annotations

import pytest

from support import check
from shapescript_core.ide.hover import hover
from shapescript_core.workspace import Workspace

LAYERS = '''
dim D = 16
dim H = 2
dim Dh = D / H
dim L = 12
dim V = 32
dim W = 4

model Block:
    wq: [D D]

model M:
    embed: [V D]
    layers: [L] Block
    lm_head: [V D]

fn attn(b: Block, x: [b n D], pos: [b n] i64, theta: [], window: []) -> [b n D]:
    q = x @ b.wq |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=theta)
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=window)
    return o |> rearrange(b H n Dh -> b n (H Dh))

fn forward(m: M, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for i, layer in m.layers:
        theta = 1e4 if i % 6 != 5 else 1e6
        w = W if i % 6 != 5 else 2 * W
        x = attn(layer, x, pos, theta, w)
    return linear(x, m.lm_head)
'''


def errors(src: str) -> list:
    return [(d.code, d.message) for d in check(src)[1] if d.severity == 1]


def test_a_layer_index_and_compile_time_settings_check():
    assert errors(LAYERS) == []


@pytest.mark.parametrize("cond", ["c > 0", "n > 3", "x"])
def test_a_condition_computed_when_the_model_runs_is_e0413(cond):
    src = ("dim D = 4\nfn f(x: [n D], y: [n D]) -> [n D]:\n    c = mean(x)\n"
           f"    return x if {cond} else y\n")
    got = errors(src)
    assert [c for c, _ in got] == ["E0413"], got
    assert got[0][1] == "this condition isn't known before the model runs"


@pytest.mark.parametrize("cond", ["1 < 2", "D // 2 == 2", "D % 3 == 1 and not false", "s > 0.5"])
def test_compile_time_conditions_check(cond):
    src = f"dim D = 4\nfn f(x: [n D], y: [n D], s: []) -> [n D]:\n    return x if {cond} else y\n"
    assert errors(src) == []


def test_branches_of_two_types_are_e0401_once():
    src = "dim D = 4\nfn f(x: [n D]) -> [n D]:\n    return x if 1 < 2 else 3\n"
    assert errors(src) == [("E0401", "expected [n D], found a number")]


@pytest.mark.parametrize("call, code, message", [
    ("scaled_dot_product_attention(q, q, q, window=3)", "E0206",
     "`scaled_dot_product_attention` needs `attn_mask=`"),
    ("scaled_dot_product_attention(q, q, q, attn_mask=keep, window=3)", "E0304",
     "`attn_mask` must be `causal[…]` beside `window=`, found `keep`"),
    ("scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=0)", "E0304",
     "`window` must be a positive compile-time integer, found 0"),
    ("scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=D - 9)", "E0304",
     "`window` must be a positive compile-time integer, found -1"),
    ("scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=n)", "E0304",
     "`window` must be a positive compile-time integer, found a value computed when the model runs"),
    ("scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=1.5)", "E0304",
     "`window` must be a positive compile-time integer, found a number"),
])
def test_a_window_needs_the_causal_mask_and_a_positive_compile_time_integer(call, code, message):
    src = f"dim D = 8\nfn f(q: [b h n D], keep: [n n] bool) -> [b h n D]:\n    return {call}\n"
    assert errors(src) == [(code, message)]


def test_hover_shows_compile_time_values_per_layer():
    ws = Workspace()
    ws.set_text("/tmp/v02/h.ss", LAYERS)

    def at(word, skip=0):
        h = hover(ws, "/tmp/v02/h.ss", LAYERS.index(word) + skip)
        return h.markdown if h else ""
    assert "the layer's index, `0` … `11`" in at("i, layer")
    theta = at("theta = 1e4")
    assert "- `10000.0` in layers 0–4, 6–10" in theta and "- `1000000.0` in layers 5, 11" in theta
    assert "- `4` in layers 0–4, 6–10\n- `8` in layers 5, 11" in at("w = W")
    # a use of the local shows the same
    assert at("x = attn(layer, x, pos, theta", len("x = attn(layer, x, pos, ")) == theta
    # a non-compile-time local shows its type only
    assert "per layer" not in at("x = embedding") and "compile-time" not in at("x = embedding")


def _band(q, window):
    """Sliding-window causal attention written by hand: a query at i sees i-W < j <= i."""
    import torch
    n = q.shape[-2]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    keep = (j <= i) & (j > i - window)
    s = (q @ q.transpose(-1, -2)) / q.shape[-1] ** 0.5
    return s.masked_fill(~keep, float("-inf")).softmax(-1) @ q


def test_the_evaluator_computes_the_window_per_layer():
    torch = pytest.importorskip("torch")
    from shapescript_core.evaluate import load
    prog = load(LAYERS)
    w = prog.random_weights("forward", seed=0, std=0.3)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 32, (2, 20), generator=g)
    pos = torch.arange(20).expand(2, 20).contiguous()
    got = prog.run("forward", w, ids=ids, pos=pos)

    def rope(x, theta):
        dh = x.shape[-1]
        inv = 1.0 / (theta ** (torch.arange(0, dh, 2).float() / dh))
        ang = pos[:, None, :, None].float() * inv
        cos, sin = torch.cat((ang.cos(), ang.cos()), -1), torch.cat((ang.sin(), ang.sin()), -1)
        return x * cos + torch.cat((-x[..., dh // 2:], x[..., :dh // 2]), -1) * sin

    def hand(windows):
        x = w["embed"][ids]
        for k in range(12):
            theta = 1e4 if k % 6 != 5 else 1e6
            q = rope((x @ w[f"layers.{k}.wq"]).view(2, 20, 2, 8).transpose(1, 2), theta)
            x = _band(q, windows[k]).transpose(1, 2).reshape(2, 20, 16)
        return x @ w["lm_head"].T
    want = hand([4 if k % 6 != 5 else 8 for k in range(12)])
    assert (got - want).abs().max().item() < 1e-4
    # the window matters: full attention (or one window everywhere) is another model here
    assert (got - hand([20] * 12)).abs().max().item() > 1e-2
    assert (got - hand([4] * 12)).abs().max().item() > 1e-2


PLAIN = '''
dim D = 8
dim W = 3

model M:
    g: [D] = ones

@export(hf)
fn forward(m: M, q: [b h n D], k: [b h n D]) -> [b h n D]:
    for_layers = W * 2 - 3 if D % 2 == 0 else 1
    return scaled_dot_product_attention(q * m.g, k, k, attn_mask=causal[n n], window=for_layers)
'''


def test_the_compiled_pytorch_computes_the_window():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from compile_support import Program
    from shapescript_core.evaluate import load
    compiled = Program(PLAIN).compile("forward")
    assert "window_mask(" in compiled.source
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 9, 8, generator=g), torch.randn(2, 3, 9, 8, generator=g)
    compiled.load({"m.g": torch.ones(8)})
    got = compiled({"q": q, "k": k})
    ev = load(PLAIN).run("forward", {"g": torch.ones(8)}, q=q, k=k)
    n = 9
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    keep = (j <= i) & (j > i - 3)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=keep)
    assert (got - want).abs().max().item() < 1e-5
    assert (ev - want).abs().max().item() < 1e-5
    full = torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True)
    assert (got - full).abs().max().item() > 1e-3


def test_if_and_else_are_keywords_only_between_operands():
    """`if`/`else` are not reserved (LANGUAGE.md §1): a field or local may be called so."""
    from shapescript_core.ide.semantic_tokens import semantic_tokens
    src = ("dim D = 4\nmodel M:\n    else: [D]\n    if: [D]\n"
           "fn f(m: M, x: [n D]) -> [n D]:\n    y = x * m.else if D > 2 else x * m.if\n    return y\n")
    assert errors(src) == []
    ws = Workspace()
    ws.set_text("/tmp/v02/k.ss", src)
    kinds = {src[t.start:t.end] + "@" + str(t.start): t.type for t in semantic_tokens(ws, "/tmp/v02/k.ss")}
    line = src.index("    y = ")
    assert kinds[f"if@{src.index(' if ', line) + 1}"] == "keyword"
    assert kinds[f"else@{src.index(' else ', line) + 1}"] == "keyword"
    assert kinds.get(f"else@{src.index('else:')}") != "keyword"


def test_a_scalar_parameter_given_a_value_the_model_computes_is_e0413_at_the_call(tmp_path):
    """Inside its function a scalar parameter is a compile-time value; each call must pass
    one, checked per calling context over what an exported function reaches. (A value
    read from the weights: one computed from the tokens would also mix them, E3304.)"""
    pytest.importorskip("torch")
    from differential_support import Case, export
    from shapescript_core.evaluate import load
    src = LAYERS.replace("w = W if i % 6 != 5 else 2 * W", "w = W") \
        .replace("theta = 1e4 if i % 6 != 5 else 1e6", "theta = 1e4 if i % 6 != 5 else mean(layer.wq)") \
        .replace("fn attn(b: Block, x: [b n D], pos: [b n] i64, theta: [], window: []) -> [b n D]:",
                 "fn attn(b: Block, x: [b n D], pos: [b n] i64, theta: [], window: []) -> [b n D]:\n"
                 "    theta = theta if theta > 1 else 2.0")
    ws, diags = check(src)
    got = [(d.code, d.message, d.span.abs_start, d.primary_label) for d in diags if d.severity == 1]
    call = src.index("x = attn(layer, x, pos, theta, w)") + len("x = attn(layer, x, pos, ")
    line = src[:src.index("theta if theta > 1")].count("\n") + 1
    assert got == [("E0413", "this condition isn't known before the model runs", call,
                    f"computed when the model runs, but `theta` of `attn` chooses a branch at line {line}")]
    r = export(Case(src, lm=True), {}, str(tmp_path / "hf"))
    assert not r.ok and [d.code for d in r.diagnostics] == ["E0413"]
    assert not (tmp_path / "hf").exists()


def test_scalar_parameters_decide_per_calling_context():
    src = """
dim D = 8
dim W = 4

fn pick(x: [b n D], t: []) -> [b n D]:
    u = t * 2
    return x if u > 1 else -x

fn att(q: [b h n D], w: []) -> [b h n D]:
    return scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=w)

fn via(x: [b n D], s: []) -> [b n D]:
    s = s + 1
    return pick(x, s)

model M:
    g: [D] = ones

@export(hf)
fn forward(m: M, x: [b n D], k: [b h n D]) -> [b n D]:
    y = pick(x, 3) + via(x, W) + pick(x, mean(x))
    o = att(k, sum(x))
    return y + via(x, mean(x)) * m.g
"""
    got = [(d.code, src[d.span.abs_start:d.span.abs_end]) for d in check(src)[1] if d.severity == 1]
    assert got == [("E0413", "mean(x)"), ("E0413", "sum(x)"), ("E0413", "mean(x)")]


BRANCHED = '''
dim V = 32
dim D = 64
dim H = 1
dim Dh = D / H
dim L = 2

model Block:
    wq: [D D]

model M:
    embed: [V D]
    layers: [L] Block

fn attn(b: Block, x: [b n D], local: []) -> [b n D]:
    q = linear(x, b.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=4) if local > 0 else OTHER
    return x + (o |> rearrange(b H n Dh -> b n (H Dh)))

@export(hf, vllm)
fn forward(m: M, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.embed)
    for i, layer in m.layers:
        x = attn(layer, x, i % 2)
    return linear(x, m.embed)
'''


@pytest.mark.parametrize("other, want", [
    # attention in both branches: the export checks follow both (no "has no attention")
    ("scaled_dot_product_attention(q, q, q, attn_mask=causal[n n])", []),
    # a branch that mixes tokens is E3304 even when the other one attends
    ("q - mean(q, over=n)", ["E3304"]),
])
def test_the_export_checks_follow_both_branches_of_a_compile_time_choice(other, want):
    got = [c for c, _ in errors(BRANCHED.replace("OTHER", other))]
    assert got == want
