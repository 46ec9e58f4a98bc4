"""Issue 20: scalar keywords take any scalar expression, and every export computes it.

The issue's program (tests/programs/scalars/issue20.ss) passes eps, rope's theta and
attention's scale through function parameters, from literals, dims and arithmetic. Its
--hf export, run by transformers with and without the KV cache, must equal the
reference evaluator and a hand-written torch model of what the source says."""
from __future__ import annotations

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from checkout import read_program  # noqa: E402
from differential_support import Case, compare, evaluator_outputs, export, hf_outputs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ISSUE = os.path.join(HERE, "programs", "scalars", "issue20.ss")
D, H, HKV, DH = 32, 4, 2, 8


def hand_model(w, ids, eps=(0.5, 1 / DH, D / 1000), theta=3.0, scale=3.0):
    """issue20.ss written out in torch by hand: eps 0.5, 1/Dh and D/1000, theta 3, scale 3."""
    F = torch.nn.functional

    def rms(x, g, eps):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g

    def rope(x, theta):
        n = x.shape[2]
        inv = 1.0 / (theta ** (torch.arange(0, DH, 2).float() / DH))
        ang = torch.arange(n).float()[:, None] * inv
        cos, sin = torch.cat((ang.cos(), ang.cos()), -1), torch.cat((ang.sin(), ang.sin()), -1)
        rot = torch.cat((-x[..., DH // 2:], x[..., :DH // 2]), -1)
        return x * cos + rot * sin

    b, n = ids.shape
    x = w["embed"][ids]
    for i in range(2):
        p = f"layers.{i}."
        h = rms(x, w[p + "attn.nw"], eps[0])
        q = rope((h @ w[p + "attn.wq"].T).view(b, n, H, DH).transpose(1, 2), theta)
        k = rope((h @ w[p + "attn.wk"].T).view(b, n, HKV, DH).transpose(1, 2), theta)
        v = (h @ w[p + "attn.wv"].T).view(b, n, HKV, DH).transpose(1, 2)
        k, v = k.repeat_interleave(H // HKV, 1), v.repeat_interleave(H // HKV, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
        x = x + o.transpose(1, 2).reshape(b, n, D) @ w[p + "attn.wo"].T
        h2 = rms(x, w[p + "attn.nw"], eps[1])
        x = x + F.silu(h2 @ w[p + "w_up"].T) @ w[p + "w_down"].T
    return rms(x, w["norm"], eps[2]) @ w["lm_head"].T


@pytest.fixture(scope="module")
def issue(tmp_path_factory):
    case = Case(open(ISSUE).read(), lm=True)
    prog, weights, inputs, want = evaluator_outputs(case)
    out = str(tmp_path_factory.mktemp("issue20") / "hf")
    r = export(case, weights, out)
    assert r.ok, r.message
    return case, weights, inputs, want, out


def test_evaluator_computes_what_the_source_says(issue):
    _, weights, inputs, want, _ = issue
    hand = hand_model(weights, inputs["ids"])
    assert (want - hand).abs().max().item() / hand.abs().max().item() < 1e-5
    # the builtins' defaults compute another model: the comparison tells them apart
    defaults = hand_model(weights, inputs["ids"], eps=(1e-6,) * 3, theta=10000.0, scale=DH ** -0.5)
    assert (want - defaults).abs().max().item() > 0.1


def test_hf_export_computes_the_scalars_as_written(issue):
    case, weights, inputs, want, out = issue
    got = hf_outputs(case, out, inputs)
    hand = hand_model(weights, inputs["ids"])
    assert compare(want, got) == {"full": pytest.approx(0, abs=1e-5), "cached": pytest.approx(0, abs=1e-5)}
    assert (got["full"] - hand).abs().max().item() / hand.abs().max().item() < 1e-5
    modeling = open(os.path.join(out, "modeling_lm.py")).read()
    assert "rms_norm(x, w, 2, e)" in modeling          # passed through
    # every rope rotates by the positions with theta 3: one rotary table, its theta folded
    assert "RotaryEmbedding(config, 8, 'half')" in modeling
    assert "q = rotate(self.wq(x)" in modeling and "q = rope(" not in modeling
    assert json.load(open(os.path.join(out, "config.json")))["rope_parameters"] == \
        {"rope_type": "default", "rope_theta": 3.0}
    assert "CausalAttention(config, layer_idx, H, 2, 3.0, Dh)" in modeling  # folded: every call passes 3.0
    assert "1e-06" not in modeling and "10000.0" not in modeling


SCALES = '''
dim V = 64
dim D = 32
dim H = 4
dim Dh = D / H
dim L = 1

model A:
    wq: [H*Dh D]
    wk: [H*Dh D]
    wv: [H*Dh D]
    wo: [D H*Dh]

model Lm:
    embed: [V D]
    a1: A
    a2: A
    lm_head: [V D]

fn attn(m: A, x: [b n D], pos: [b n] i64, t: []) -> [b n D]:
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=t * 100)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=t * 100)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=t / sqrt(Dh))
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(m.wo)

@export(hf, vllm)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    x = x + attn(m.a1, x, pos, 0.5)
    x = x + attn(m.a2, x, pos, 2.0)
    return linear(x, m.lm_head)
'''


def test_scales_that_differ_per_call_pass_at_run_time(tmp_path):
    """Two calls of one attention with two scales: --hf passes each call's scale; --vllm,
    whose attention fixes one scale when it loads, refuses before writing anything."""
    case = Case(SCALES, lm=True)
    prog, weights, inputs, want = evaluator_outputs(case)
    out = str(tmp_path / "hf")
    r = export(case, weights, out)
    assert r.ok, r.message
    modeling = open(os.path.join(out, "modeling_lm.py")).read()
    assert "self.attention.scaling = float(t / math.sqrt(Dh))" in modeling
    assert compare(want, hf_outputs(case, out, inputs)) == {"full": pytest.approx(0, abs=1e-5),
                                                          "cached": pytest.approx(0, abs=1e-5)}
    r = export(case, weights, str(tmp_path / "vllm"), target="vllm")
    assert not r.ok and "vLLM's attention takes one scale per layer" in r.message
    assert "line 24" in r.message
    assert not os.path.exists(tmp_path / "vllm")
    assert math.isfinite(want.abs().max().item())


def test_an_attention_run_twice_per_forward_is_refused(tmp_path):
    """A language model's attention holds one KV-cache slot: the nested loop of the
    security reproduction 04 runs each `else.j` block L times per forward, so the cached
    logits would be another model's. The export refuses before writing anything."""
    src = read_program("security", "04_loop_head_else.ss")  # a copy of ../shared/repro/security's
    case = Case(src, lm=True)
    _, weights, _, _ = evaluator_outputs(case)
    for target in ("hf", "vllm"):
        r = export(case, weights, str(tmp_path / target), target=target)
        assert not r.ok and "runs 2 times on `else.0.attn` in one forward" in r.message, r.message
        assert "KV cache holds one slot per attention" in r.message
        assert not os.path.exists(tmp_path / target)
