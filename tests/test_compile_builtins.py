"""Every builtin of LANGUAGE.md §6, compiled to PyTorch and run against hand-written torch.

Each case is one exported function of one program (checked once): its signature, its
body and a reference in plain torch (no einops) over the same random inputs and params.
Axis sizes are all different (b=2 n=5 m=7 s=13, Hkv=3 G=4 Dh=6 D=8 Dv=9 V=10 F=11 H=12),
so that a wrong permutation, a wrong `over` axis or a wrong broadcast cannot pass.
"""
from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
from compile_support import DIMS, assert_matches, fn_name, program_of  # noqa: E402

Fn = torch.nn.functional

HEADER = DIMS + """
model M:
    g: [D] = ones
    ln_w: [D] = ones
    ln_b: [D] = zeros
    w: [F D]
    wb: [F D]
    bias: [F] = zeros
    w2: [F D]
    E: [V D]
    P: [D F]
    w3: [F D]
    b3: [F]
    b4: [F]
    w5: [F D]
"""


def rope_ref(x, pos, theta, style):
    """Rotary embedding written out: angles pos * theta^(-2i/Dh), for x's last axis."""
    width = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, width, 2).double() / width)
    ang = (pos.double()[..., None] * inv).float()
    cos, sin = ang.cos(), ang.sin()
    if style == "half":
        x1, x2 = x[..., : width // 2], x[..., width // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


def sinks_ref(q, k, v, z, mask, groups=1):
    """attention_ref with one more logit per head, z[h], whose probability is dropped."""
    k = k.repeat_interleave(groups, dim=-3)
    v = v.repeat_interleave(groups, dim=-3)
    scores = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).masked_fill(~mask, float("-inf"))
    sink = z[:, None, None].expand(scores.shape[:-1] + (1,))
    return torch.cat([scores, sink], -1).softmax(-1)[..., :-1] @ v


def attention_ref(q, k, v, mask=None, scale=None, groups=1):
    """softmax(q kᵀ · scale, masked) v, keys and values repeated per query-head group."""
    k = k.repeat_interleave(groups, dim=-3)
    v = v.repeat_interleave(groups, dim=-3)
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1) @ v


def causal(rows, cols):
    return torch.ones(rows, cols, dtype=torch.bool).tril()


UNARY = {
    "exp": torch.exp, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": Fn.gelu,
    "gelu_tanh": lambda x: Fn.gelu(x, approximate="tanh"), "silu": Fn.silu, "abs": torch.abs,
    "neg": torch.neg, "square": torch.square, "sin": torch.sin, "cos": torch.cos,
}
POSITIVE = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}  # on x * x + 0.25
SCALAR = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": lambda v: 1 / math.sqrt(v),
    "tanh": math.tanh, "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "relu": lambda v: max(v, 0.0),
    "gelu": lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2))),
    "gelu_tanh": lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
    "silu": lambda v: v / (1 + math.exp(-v)), "abs": abs, "neg": lambda v: -v, "square": lambda v: v * v,
    "sin": math.sin, "cos": math.cos,
}
REDUCTIONS = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
              "logsumexp": torch.logsumexp}


def _unary_cases():
    for name, f in UNARY.items():
        yield name, "x: [b n D] -> [b n D]", f"{name}(x)", lambda t, f=f: f(t["x"])
    for name, f in POSITIVE.items():
        yield name, "x: [b n D] -> [b n D]", f"{name}(x * x + 0.25)", lambda t, f=f: f(t["x"] * t["x"] + 0.25)
    for name, f in SCALAR.items():
        arg = "1.7" if name in ("log", "sqrt", "rsqrt") else "-0.7"
        yield (f"scalar_{name}", "x: [b n D] -> [b n D]", f"x * {name}({arg})",
               lambda t, f=f, v=float(arg): t["x"] * f(v))
    yield "scalar_sqrt_dim", "x: [b n D] -> [b n D]", "x * sqrt(Dh)", lambda t: t["x"] * math.sqrt(6)
    yield ("scalar_dims", "x: [b n D] -> [b n D]", "x * (1 / sqrt(Dh)) + exp(F / D) - log(H)",
           lambda t: t["x"] * (1 / math.sqrt(6)) + math.exp(11 / 8) - math.log(12))


def _reduction_cases():
    for name, f in REDUCTIONS.items():
        flat = (lambda t, f=f: torch.logsumexp(t["x"].flatten(), 0)) if name == "logsumexp" else \
            (lambda t, f=f: f(t["x"]))
        yield f"{name}_all", "x: [b n D] -> []", f"{name}(x)", flat
        yield f"{name}_over_n", "x: [b n D] -> [b D]", f"{name}(x, over=n)", lambda t, f=f: f(t["x"], 1)
        yield f"{name}_over_D", "x: [b n D] -> [b n]", f"{name}(x, over=D)", lambda t, f=f: f(t["x"], 2)
        yield (f"{name}_over_tuple", "x: [b n D] -> [n]", f"{name}(x, over=(D, b))",
               lambda t, f=f: f(t["x"], (0, 2)))


CASES = [
    *_unary_cases(),
    # ---- by name, as §3.2
    ("softcap", "x: [b n D] -> [b n D]", "softcap(x, 2.5)", lambda t: 2.5 * torch.tanh(t["x"] / 2.5)),
    ("softcap_by_dim", "x: [b n D] -> [b n D]", "softcap(x, Dh)", lambda t: 6 * torch.tanh(t["x"] / 6)),
    ("softcap_by_arithmetic", "x: [b n D] -> [b n D]", "softcap(x, 0.5 * Dh)",  # c parenthesized: x / (0.5 * 6)
     lambda t: 3 * torch.tanh(t["x"] / 3)),
    ("maximum_orders", "x: [b n D], y: [D b] -> [b n D]", "maximum(x, y)",
     lambda t: torch.maximum(t["x"], t["y"].T[:, None, :])),
    ("minimum_small_first", "y: [n D], x: [b n D] -> [b n D]", "minimum(y, x)",
     lambda t: torch.minimum(t["y"][None], t["x"])),
    ("maximum_scalar", "x: [b n D] -> [b n D]", "maximum(x, 0.25)", lambda t: t["x"].clamp(min=0.25)),
    ("minimum_scalar_first", "x: [b n D] -> [b n D]", "minimum(-0.5, x)", lambda t: t["x"].clamp(max=-0.5)),
    ("where_by_name", "c: [n D] bool, x: [b n D], y: [D] -> [b n D]", "where(c, x, y)",
     lambda t: torch.where(t["c"][None], t["x"], t["y"])),
    ("where_cond_permuted", "c: [D n] bool, x: [n D], y: [b n D] -> [b n D]", "where(c, x, y)",
     lambda t: torch.where(t["c"].T[None], t["x"][None], t["y"])),
    ("where_two_scalars", "c: [D n] bool -> [D n]", "where(c, 1.5, -2.0)",
     lambda t: torch.where(t["c"], 1.5, -2.0)),
    ("maximum_of_numbers", "x: [b n D] -> [b n D]", "x * maximum(Dh, 2.5) + minimum(F, 3.5)",
     lambda t: t["x"] * 6 + 3.5),
    ("where_cond_largest", "c: [b n D] bool, x: [D], y: [] -> [b n D]", "where(c, x, y)",
     lambda t: torch.where(t["c"], t["x"], t["y"])),
    ("scalar_tensor", "x: [b n D], a: [] -> [b n D]", "maximum(x * a, a)",
     lambda t: torch.maximum(t["x"] * t["a"], t["a"])),
    ("where_scalar", "x: [b n D] -> [b n D]", "where(x > 0.0, x, 0.1)",
     lambda t: torch.where(t["x"] > 0, t["x"], 0.1)),
    # ---- reductions
    *_reduction_cases(),
    ("reduced_all_broadcast", "x: [b n D] -> [b n D]", "x - mean(x)", lambda t: t["x"] - t["x"].mean()),
    ("reduced_tuple_broadcast", "x: [b n D] -> [b n D]", "x - mean(x, over=(b, D))",
     lambda t: t["x"] - t["x"].mean((0, 2))[:, None]),
    # a name standing for two axes: the reduction removes both, as the checker's type says
    ("sum_over_repeated_name", "x: [b n n] -> [b]", "sum(x, over=n)", lambda t: t["x"].sum((1, 2))),
    ("logsumexp_over_repeated_name", "x: [n b n] -> [b]", "logsumexp(x, over=n)",
     lambda t: torch.logsumexp(t["x"], (0, 2))),
    ("argmax_over_n", "x: [b n D] -> [b D] Index[n]", "argmax(x, over=n)", lambda t: t["x"].argmax(1)),
    ("argmax_over_b", "x: [b n D] -> [n D] Index[b]", "argmax(x, over=b)", lambda t: t["x"].argmax(0)),
    ("one_hot_of_argmax", "x: [b n D] -> [b D n] f32", "one_hot(argmax(x, over=n))",
     lambda t: Fn.one_hot(t["x"].argmax(1), 5).float()),
    ("embedding_of_argmax", "x: [b n D], T: [n F] -> [b D F]", "embedding(argmax(x, over=n), T)",
     lambda t: t["T"][t["x"].argmax(1)]),
    ("softmax_over_D", "x: [b n D] -> [b n D]", "softmax(x, over=D)", lambda t: t["x"].softmax(2)),
    ("softmax_over_n", "x: [b n D] -> [b n D]", "softmax(x, over=n)", lambda t: t["x"].softmax(1)),
    ("log_softmax_over_D", "x: [b n D] -> [b n D]", "log_softmax(x, over=D)", lambda t: t["x"].log_softmax(2)),
    ("log_softmax_over_b", "x: [b n D] -> [b n D]", "log_softmax(x, over=b)", lambda t: t["x"].log_softmax(0)),
    # ---- norms
    ("rms_norm_field", "x: [b n D] -> [b n D]", "rms_norm(x, m.g, over=D)",
     lambda t: t["x"] * torch.rsqrt(t["x"].pow(2).mean(-1, keepdim=True) + 1e-6) * t["m.g"]),
    ("rms_norm_middle", "x: [b n D], w: [n] -> [b n D]", "rms_norm(x, w, over=n, eps=1e-3)",
     lambda t: t["x"] * torch.rsqrt(t["x"].pow(2).mean(1, keepdim=True) + 1e-3) * t["w"][:, None]),
    ("rms_norm_tuple", "x: [b n D], w: [b D] -> [b n D]", "rms_norm(x, w, over=(b, D))",
     lambda t: t["x"] * torch.rsqrt(t["x"].pow(2).mean((0, 2), keepdim=True) + 1e-6) * t["w"][:, None, :]),
    ("layer_norm_last", "x: [b n D] -> [b n D]", "layer_norm(x, m.ln_w, m.ln_b, over=D)",
     lambda t: Fn.layer_norm(t["x"], (8,), t["m.ln_w"], t["m.ln_b"], 1e-5)),
    ("layer_norm_middle", "x: [b n D], w: [n], c: [n] -> [b n D]", "layer_norm(x, w, c, over=n, eps=1e-4)",
     lambda t: Fn.layer_norm(t["x"].transpose(1, 2), (5,), t["w"], t["c"], 1e-4).transpose(1, 2)),
    ("layer_norm_reversed", "x: [b n D], w: [D n], c: [D n] -> [b n D]", "layer_norm(x, w, c, over=(D, n))",
     lambda t: Fn.layer_norm(t["x"], (5, 8), t["w"].T, t["c"].T, 1e-5)),
    ("rms_norm_reversed", "x: [b n D], w: [D b] -> [b n D]", "rms_norm(x, w, over=(D, b), eps=1e-2)",
     lambda t: t["x"] * torch.rsqrt(t["x"].pow(2).mean((0, 2), keepdim=True) + 1e-2) * t["w"].T[:, None, :]),
    ("layer_norm_last_two", "x: [b n D], w: [n D], c: [n D] -> [b n D]", "layer_norm(x, w, c, over=(n, D))",
     lambda t: Fn.layer_norm(t["x"], (5, 8), t["w"], t["c"], 1e-5)),
    # ---- linear and matmul
    ("linear_field", "x: [b n D] -> [b n F]", "linear(x, m.w)", lambda t: t["x"] @ t["m.w"].T),
    ("linear_field_bias", "x: [b n D] -> [b n F]", "linear(x, m.wb, m.bias)",
     lambda t: t["x"] @ t["m.wb"].T + t["m.bias"]),
    ("linear_param", "x: [b n D], W: [F D] -> [b n F]", "linear(x, W)", lambda t: t["x"] @ t["W"].T),
    ("linear_param_bias", "x: [b n D], W: [F D], c: [F] -> [b n F]", "linear(x, W, c)",
     lambda t: t["x"] @ t["W"].T + t["c"]),
    ("linear_field_param_bias", "x: [b D], c: [F] -> [b F]", "linear(x, m.w2, c)",
     lambda t: t["x"] @ t["m.w2"].T + t["c"]),
    ("linear_param_field_bias", "x: [b n D], W: [F D] -> [b n F]", "linear(x, W, m.bias)",
     lambda t: t["x"] @ t["W"].T + t["m.bias"]),
    ("linear_two_biases", "x: [b n D] -> [b n F]", "linear(x, m.w3, m.b3) - linear(x, m.w3, m.b4)",
     lambda t: (t["x"] @ t["m.w3"].T + t["m.b3"]) - (t["x"] @ t["m.w3"].T + t["m.b4"])),
    ("linear_weight_read_elsewhere", "x: [b n D] -> [b n F]", "linear(x, m.w5) + sum(m.w5, over=D)",
     lambda t: t["x"] @ t["m.w5"].T + t["m.w5"].sum(1)),
    ("matmul_field", "x: [b n D] -> [b n F]", "matmul(x, m.P)", lambda t: t["x"] @ t["m.P"]),
    ("matmul_operator", "x: [b n D], w: [D F] -> [b n F]", "x @ w", lambda t: t["x"] @ t["w"]),
    ("matmul_vector", "x: [b n D], v: [D] -> [b n]", "x @ v", lambda t: t["x"] @ t["v"]),
    ("matmul_batch_same_order", "x: [b n D], w: [b D F] -> [b n F]", "x @ w", lambda t: t["x"] @ t["w"]),
    ("matmul_batch_other_order", "x: [b s n D], w: [s b D F] -> [b s n F]", "matmul(x, w)",
     lambda t: t["x"] @ t["w"].transpose(0, 1)),
    ("matmul_batch_heads", "q: [b H n Dh], k: [H b Dh m] -> [b H n m]", "q @ k",
     lambda t: t["q"] @ t["k"].transpose(0, 1)),
    ("matmul_batch_right_larger", "x: [n D], w: [b n D F] -> [b n F]", "x @ w",
     lambda t: (t["x"][None, :, None, :] @ t["w"])[:, :, 0, :]),
    ("matmul_batch_repeated_names", "x: [n D], w: [n n D F] -> [n n F]", "x @ w",
     lambda t: (t["x"][:, None, None, :] @ t["w"])[:, :, 0, :]),
    ("matmul_batch_left_vector", "x: [D], w: [b s D F] -> [b s F]", "x @ w", lambda t: t["x"] @ t["w"]),
    # ---- embeddings
    ("embedding_field", "ids: [b n] Index[V] -> [b n D]", "embedding(ids, m.E)", lambda t: t["m.E"][t["ids"]]),
    ("embedding_param", "ids: [n b] Index[V], T: [V F] -> [n b F]", "embedding(ids, T)",
     lambda t: t["T"][t["ids"]]),
    ("one_hot", "ids: [n b] Index[V] -> [n b V] f32", "one_hot(ids)",
     lambda t: (t["ids"][..., None] == torch.arange(10)).float()),
    # ---- rope
    ("rope_half_pos_bn", "x: [b H n Dh], pos: [b n] i64 -> [b H n Dh]", "rope(x, pos)",
     lambda t: rope_ref(t["x"], t["pos"][:, None, :], 10000.0, "half")),
    ("rope_interleaved_pos_n", "x: [b H n Dh], pos: [n] i64 -> [b H n Dh]",
     'rope(x, pos, theta=500.0, style="interleaved")',
     lambda t: rope_ref(t["x"], t["pos"], 500.0, "interleaved")),
    ("rope_half_heads_inside", "x: [b n H Dh], pos: [b n] i64 -> [b n H Dh]", "rope(x, pos, theta=100.0)",
     lambda t: rope_ref(t["x"], t["pos"][:, :, None], 100.0, "half")),
    ("rope_interleaved_pos_b", "x: [b n H Dh], pos: [b] i64 -> [b n H Dh]", 'rope(x, pos, style="interleaved")',
     lambda t: rope_ref(t["x"], t["pos"][:, None, None], 10000.0, "interleaved")),
    # ---- attention
    ("sdpa", "q: [b H n Dh], k: [b H m Dh], v: [b H m Dv] -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v)", lambda t: attention_ref(t["q"], t["k"], t["v"])),
    ("sdpa_causal", "q: [b H n Dh], k: [b H m Dh], v: [b H m Dv] -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, attn_mask=causal[n m])",
     lambda t: attention_ref(t["q"], t["k"], t["v"], causal(5, 7))),
    ("sdpa_mask_batch", "q: [b H n Dh], k: [b H m Dh], v: [b H m Dv], mk: [b n m] bool -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, attn_mask=mk or causal[n m])",
     lambda t: attention_ref(t["q"], t["k"], t["v"], (t["mk"] | causal(5, 7))[:, None])),
    ("sdpa_mask_transposed", "q: [b H n Dh], k: [b H m Dh], v: [b H m Dv], mk: [m n] bool -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, attn_mask=mk or causal[m n])",
     lambda t: attention_ref(t["q"], t["k"], t["v"], (t["mk"] | causal(7, 5)).T)),
    ("sdpa_gqa", "q: [b H n Dh], k: [b Hkv m Dh], v: [b Hkv m Dv] -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, attn_mask=causal[n m])",
     lambda t: attention_ref(t["q"], t["k"], t["v"], causal(5, 7), groups=4)),
    ("sdpa_scale", "q: [b H n Dh], k: [b Hkv m Dh], v: [b Hkv m Dv] -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, scale=0.3)",
     lambda t: attention_ref(t["q"], t["k"], t["v"], scale=0.3, groups=4)),
    ("sdpa_scale_dims", "q: [b H n Dh], k: [b H m Dh], v: [b H m Dv] -> [b H n Dv]",
     "scaled_dot_product_attention(q, k, v, scale=1 / sqrt(Dv))",
     lambda t: attention_ref(t["q"], t["k"], t["v"], scale=1 / 3)),
    ("sdpa_sinks", "q: [b H n Dh], k: [b Hkv m Dh], v: [b Hkv m Dv], z: [H] -> [b H n Dv]",  # v0.3 (gpt-oss)
     "scaled_dot_product_attention(q, k, v, attn_mask=causal[n m], sinks=z)",
     lambda t: sinks_ref(t["q"], t["k"], t["v"], t["z"], causal(5, 7), groups=4)),
    # ---- v0.3: topk and take (a mixture of experts' parts)
    ("topk_values", "x: [b n D] -> [b n G]", "a, i = topk(x, k=G, over=D)\na",
     lambda t: t["x"].topk(4, dim=2).values),
    ("topk_indices_over_n", "x: [b n D] -> [b G D] Index[n]", "a, i = topk(x, k=G, over=n)\ni",
     lambda t: t["x"].topk(4, dim=1).indices),
    ("topk_ties_lower_index_first", "x: [b n D] -> [b n G] Index[D]", "a, i = topk(x * 0.0, k=G, over=D)\ni",
     lambda t: torch.arange(4).expand(2, 5, 4)),
    ("take_gather", "x: [b n D], T: [F D] -> [b n F]", "take(T, argmax(x, over=D), over=D)",
     lambda t: t["T"].T[t["x"].argmax(2)]),
    ("take_einsum_with_no_other_slot_input", "x: [b n D], T: [D F], g: [F] -> [b n F]",  # as written
     "einsum(take(T, argmax(x, over=D), over=D), g: b n F, F -> b n F)",
     lambda t: t["T"][t["x"].argmax(2)] * t["g"]),
    ("take_experts_einsum", "x: [b n D], W: [V F D], s: [b n V] -> [b n G F]",
     "a, i = topk(s, k=G, over=V)\neinsum(x, take(W, i, over=V): b n D, b n G F D -> b n G F)",
     lambda t: torch.einsum("bnd,bngfd->bngf", t["x"], t["W"][t["s"].topk(4, dim=2).indices])),
    ("take_experts_einsum_middle_axis_reordered", "x: [b n D], W: [F V D], s: [b n V] -> [F b G n]",
     "a, i = topk(s, k=G, over=V)\neinsum(x, take(W, i, over=V): b n D, b n G F D -> F b G n)",
     lambda t: torch.einsum("bnd,bngfd->fbgn", t["x"], t["W"].movedim(1, 0)[t["s"].topk(4, dim=2).indices])),
    ("take_experts_einsum_weights_by_slot", "h: [b n G F], W: [V D F], s: [b n V] -> [b n G D]",
     "a, i = topk(s, k=G, over=V)\neinsum(h, take(W, i, over=V): b n G F, b n G D F -> b n G D)",
     lambda t: torch.einsum("bngf,bngdf->bngd", t["h"], t["W"][t["s"].topk(4, dim=2).indices])),
    ("sdpa_two_batch_axes", "q: [s b H n Dh], k: [s b Hkv m Dh], v: [s b Hkv m Dv], mk: [b n m] bool -> [s b H n Dv]",
     "scaled_dot_product_attention(q, k, v, attn_mask=mk or causal[n m])",
     lambda t: attention_ref(t["q"], t["k"], t["v"], (t["mk"] | causal(5, 7))[:, None], groups=4)),
    # ---- masks, scale, casts
    ("masked_fill_fewer_axes", "x: [b n D], mk: [b D] bool -> [b n D]", "masked_fill(x, mk, -inf)",
     lambda t: t["x"].masked_fill(t["mk"][:, None, :], float("-inf"))),
    ("masked_fill_permuted", "x: [b n D], mk: [D n] bool -> [b n D]", "masked_fill(x, mk, 0.5)",
     lambda t: t["x"].masked_fill(t["mk"].T, 0.5)),
    ("masked_fill_causal", "x: [b n m] -> [b n m]", "masked_fill(x, !causal[n m], -1e9)",
     lambda t: t["x"].masked_fill(~causal(5, 7), -1e9)),
    ("scale_scalar", "x: [b n D] -> [b n D]", "scale(x, 1 / sqrt(Dh))", lambda t: t["x"] / math.sqrt(6)),
    ("scale_tensor", "x: [b n D], y: [n] -> [b n D]", "scale(x, y)", lambda t: t["x"] * t["y"][:, None]),
    ("to_f64", "x: [b n D] -> [b n D] f64", "to(x, f64)", lambda t: t["x"].double()),
    ("to_f16", "x: [b n D] -> [b n D] f16", "to(x, f16)", lambda t: t["x"].half()),
    ("to_from_index", "ids: [b n] Index[V] -> [b n] f32", "to(ids, f32)", lambda t: t["ids"].float()),
    ("comparisons", "x: [b n D], y: [D] -> [b n D] f32",
     "sx = to(x > 0.0, f32)\nsy = to(y > 0.0, f32)\n"
     "to(sx == sy, f32) + 2.0 * to(x != sy, f32) + 4.0 * to(x < y, f32) + 8.0 * to(x >= y, f32) "
     "+ 16.0 * to(x <= 0.5, f32) - to(x > 0.1, f32)",
     lambda t: (lambda sx, sy, x, y: (sx == sy).float() + 2.0 * (x != sy).float() + 4.0 * (x < y).float()
                + 8.0 * (x >= y).float() + 16.0 * (x <= 0.5).float() - (x > 0.1).float())(
         (t["x"] > 0).float(), (t["y"] > 0).float(), t["x"], t["y"])),
    ("power_number", "x: [b n D] -> [b n D]", "x ** 3 + 2.0 ** x", lambda t: t["x"] ** 3 + 2.0 ** t["x"]),
    ("to_from_bool", "x: [b n D] -> [b n D] i64", "to(x > 0.0, i64)", lambda t: (t["x"] > 0).long()),
    # ---- concat, arange
    ("concat_middle", "x: [b n D], y: [b n D] -> [b 2*n D]", "concat(x, y, over=n)",
     lambda t: torch.cat([t["x"], t["y"]], 1)),
    ("concat_three_first", "x: [b n D], y: [b n D], z: [b n D] -> [3*b n D]", "concat(x, y, z, over=b)",
     lambda t: torch.cat([t["x"], t["y"], t["z"]], 0)),
    ("concat_then_split", "x: [b n D], y: [b n D] -> [b n D]",
     "z = concat(x, y, over=D)\na, c = split(z, b n (2 D) -> b n D)\na * 2.0 - c", lambda t: t["x"] * 2.0 - t["y"]),
    ("concat_last", "x: [b n D], y: [b n D] -> [b n 2*D]", "concat(y, x, over=D)",
     lambda t: torch.cat([t["y"], t["x"]], 2)),
    ("arange_var", "x: [b n D] -> [n] i64", "arange(n)", lambda t: torch.arange(5)),
    ("arange_dim", "x: [b n D] -> [b n D]", "x * to(arange(D), f32)", lambda t: t["x"] * torch.arange(8.0)),
]


@pytest.fixture(scope="module")
def program():
    return program_of(HEADER, CASES)


def test_every_builtin_has_a_case():
    from shapescript_core.check.builtins import BUILTINS
    sources = " ".join(c[2] for c in CASES)
    patterns = {"rearrange", "split", "repeat", "einsum"}  # tests/test_compile_patterns.py
    missing = [name for name in BUILTINS if name not in patterns and f"{name}(" not in sources]
    assert not missing


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_builtin(program, case):
    name, _, _, reference = case
    assert_matches(program.compile(fn_name(name)), reference)


@pytest.mark.parametrize("call", ["softmax(x, over=n)", "rms_norm(x, w, over=n)", "log_softmax(x, over=(b, n))"])
def test_over_a_name_of_two_axes_is_a_clear_error(call):
    """`softmax(x, over=n)` on [b n n] could mean either axis: the export says so, naming
    the line, instead of picking one."""
    from compile_support import Program
    from shapescript_core.export_errors import ExportError
    src = HEADER + f"""
@export(hf)
fn f(m: M, x: [b n n], w: [n]) -> [b n n]:
    return {call}
"""
    with pytest.raises(ExportError, match=r"\(line \d+\): `\w+\(over=n\)`: `n` names 2 axes of the tensor"):
        Program(src).compile("f")


ONE_HOT_MODEL = """dim V = 16
dim D = 8
dim L = 2

model B:
    w: [D V]

model M:
    layers: [L] B
    w: [D V]

fn picked(ids: [b n] Index[V]) -> [b n V]:
    return one_hot(ids)

fn blk(p: B, ids: [b n] Index[V]) -> [b n D]:
    return linear(picked(ids), p.w)

@export(hf)
fn forward(m: M, ids: [b n] Index[V]) -> [b n D]:
    x = linear(one_hot(ids), m.w)
    for layer in m.layers:
        x = x + blk(layer, ids)
    return x
"""


@pytest.mark.parametrize("dtype", ["bfloat16", "float64"])
def test_one_hot_follows_the_dtype_the_model_is_loaded_in(dtype, tmp_path):
    """one_hot is f32 in the source (LANGUAGE.md): in a model loaded in bfloat16 (or f64)
    that is the weights' type, so a linear of it runs (`.float()` stopped it: "expected m1
    and m2 to have the same dtype"), in a method of the root and of a block alike."""
    import transformers as tf
    from hf_support import shapescript
    src = tmp_path / "onehot.ss"
    src.write_text(ONE_HOT_MODEL)
    shapescript("export", str(src), "--hf", "--random-weights", "-o", str(tmp_path / "out"), "--force")
    ids = torch.tensor([[1, 2, 3, 15], [0, 4, 4, 9]])
    outs = {}
    for dt in ("float32", dtype):
        m = tf.AutoModel.from_pretrained(str(tmp_path / "out"), trust_remote_code=True, dtype=getattr(torch, dt))
        with torch.no_grad():
            out = m(ids)
        outs[dt] = out[0] if isinstance(out, tuple) else getattr(out, "last_hidden_state", out)
    assert outs[dtype].dtype == getattr(torch, dtype)
    tol = 2e-2 if dtype == "bfloat16" else 1e-6
    assert torch.allclose(outs[dtype].double(), outs["float32"].double(), atol=tol)
    assert outs["float32"].abs().max() > 1e-3  # not all zeros


F32_MODEL = """dim V = 16
dim D = 8
dim L = 2

model B:
    w: [D D]
    n: [D] = ones

model M:
    embed: [V D]
    layers: [L] B

fn scaled(x: [b n D], s: []) -> [b n D]:
    return x * s

fn blk(p: B, x: [b n D], s: []) -> [b n D]:
    return rms_norm(linear(to(x, f32), p.w), p.n, over=D, eps=1e-6) |> scaled(s / 3.0)

@export(hf)
fn forward(m: M, ids: [b n] Index[V]) -> [b n D]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = x + blk(layer, x, 1 / 3)
    return x
"""


@pytest.mark.parametrize("dtype", ["bfloat16", "float64"])
def test_the_sources_f32_is_the_type_the_model_is_loaded_in(dtype, tmp_path):
    """`to(x, f32)`, a number passed to an f32 parameter `s: []`, and the norms' float32
    work: in a bfloat16 load `to(x, f32)` met bfloat16 weights ("expected m1 and m2 to
    have the same dtype"); in a float64 load the scalar (`1 / 3`), `to(x, f32)` and
    rms_norm rounded to float32. Now the float64 load is the evaluator's float64
    function (the differential runs' f64 cross-check), the bfloat16 one runs."""
    import transformers as tf
    from hf_support import shapescript
    from shapescript_core.evaluate import load
    src = tmp_path / "f32.ss"
    src.write_text(F32_MODEL)
    shapescript("export", str(src), "--hf", "--random-weights", "-o", str(tmp_path / "out"), "--force")
    ids = torch.tensor([[1, 2, 3, 15], [0, 4, 4, 9]])
    m = tf.AutoModel.from_pretrained(str(tmp_path / "out"), trust_remote_code=True, dtype=getattr(torch, dtype))
    with torch.no_grad():
        out = m(ids)
    got = out[0] if isinstance(out, tuple) else getattr(out, "last_hidden_state", out)
    assert got.dtype == getattr(torch, dtype)
    keys = json.load(open(tmp_path / "out" / "shapescript-weights.json"))["keys"]  # param path -> the model's key
    sd = m.state_dict()
    weights = {p: sd[k].double() for p, k in keys.items()}
    with torch.no_grad():
        want = load(F32_MODEL).run("forward", weights, float64=True, ids=ids)
    assert want.abs().max() > 1e-2
    tol = 1e-12 if dtype == "float64" else 5e-2 * float(want.abs().max())
    assert (got.double() - want).abs().max() <= tol
