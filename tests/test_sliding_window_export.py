"""Sliding-window attention in a language model's --hf export (issue 21): config.json says
it as transformers says its own (`sliding_window`, `layer_types`, per-type
`rope_parameters`), the generated attention honours the window with and without the KV
cache, and the cache keeps only the window on sliding layers. Held to the reference
evaluator on prompts 5x the window; a model whose windows transformers can't hold is
refused before anything is written."""
from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from differential_support import Case, export, hf_outputs, quiet, rel_error  # noqa: E402

SOURCE = '''
dim D = 16
dim H = 2
dim Dh = D / H
dim L = 6
dim V = 32
dim W = 4
dim P = 64

model Block:
    wq: [D D]
    wo: [D D]
    norm: [D] = ones

model M:
    embed: [V D]
    layers: [L] Block
    lm_head: [V D]

fn attn(b: Block, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    h = rms_norm(x, b.norm, over=D, eps=1e-6)
    q = linear(h, b.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=theta)
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], window=window)
    return x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(b.wo))

@export(hf, vllm)
fn forward(m: M, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.embed)
    for i, layer in m.layers:
        # local layers: a window of W and rope base 1e4; every third layer is global
        theta = 1e4 if i % 3 != 2 else 1e6
        x = attn(layer, x, pos, theta, W if i % 3 != 2 else P)
    return linear(x, m.lm_head)
'''
TOKENS = 20  # 5x the window


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from shapescript_core.evaluate import load
    quiet()
    case = Case(SOURCE, lm=True)
    prog = load(SOURCE)
    weights = prog.random_weights("forward", seed=0, std=0.5)
    out = str(tmp_path_factory.mktemp("swa") / "hf")
    r = export(case, weights, out)
    assert r.ok, r.message
    ids = torch.randint(0, 32, (2, TOKENS), generator=torch.Generator().manual_seed(1))
    pos = torch.arange(TOKENS).expand(2, TOKENS).contiguous()
    with torch.no_grad():
        want = prog.run("forward", weights, ids=ids, pos=pos)
        full = load(SOURCE.replace("W if i % 3 != 2 else P", "P")).run("forward", weights, ids=ids, pos=pos)
    return case, out, ids, want, full


def test_config_says_the_windows_and_rope_bases_per_layer_type(exported):
    _, out, _, _, _ = exported
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["sliding_window"] == 4
    assert cfg["layer_types"] == ["sliding_attention", "sliding_attention", "full_attention"] * 2
    assert cfg["rope_parameters"] == {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                      "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
    from transformers import AutoConfig
    loaded = AutoConfig.from_pretrained(out, trust_remote_code=True)
    assert loaded.sliding_window == 4 and loaded.layer_types == cfg["layer_types"]


def test_the_export_honours_the_window_with_and_without_the_cache(exported):
    case, out, ids, want, full = exported
    got = hf_outputs(case, out, {"ids": ids})
    assert rel_error(got["full"], want) < 1e-5
    assert rel_error(got["cached"], want) < 1e-5
    # past the window, full attention computes another model: dropping it would show
    assert rel_error(full, want) > 1e-2
    assert rel_error(full[:, :4], want[:, :4]) < 1e-5  # up to the window, the same


def test_the_cache_keeps_only_the_window_on_sliding_layers(exported):
    _, out, ids, _, _ = exported
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    with torch.no_grad():
        o = model(ids, use_cache=True)
    cache = getattr(o, "cache", None) or o.past_key_values
    # transformers' DynamicSlidingWindowLayer keeps the last window - 1 keys
    assert [layer.keys.shape[-2] for layer in cache.layers] == [3, 3, TOKENS] * 2


def test_eager_attention_honours_the_window_too(exported):
    _, out, ids, want, _ = exported
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, attn_implementation="eager").eval()
    with torch.no_grad():
        assert rel_error(model(ids, use_cache=False).logits, want) < 1e-5


@pytest.mark.parametrize("target", ["hf", "vllm"])
def test_two_windows_are_refused_before_anything_is_written(tmp_path, target):
    from shapescript_core.evaluate import load
    src = SOURCE.replace("W if i % 3 != 2 else P", "W if i % 3 != 2 else 2 * W")
    weights = load(src).random_weights("forward", seed=0)
    r = export(Case(src, lm=True), weights, str(tmp_path / target), target=target)
    assert not r.ok
    assert "hold one sliding window per model" in r.message and "windows 4, 8" in r.message
    assert not os.path.exists(tmp_path / target)


def test_litert_refuses_a_window_it_would_drop(tmp_path):
    """LiteRT-Torch's export_hf runs prefill attention as plain causal attention."""
    from envs import require_litert
    require_litert()
    from shapescript_core.evaluate import load
    weights = load(SOURCE).random_weights("forward", seed=0)
    r = export(Case(SOURCE, lm=True), weights, str(tmp_path / "litert"), target="litert")
    assert not r.ok
    assert "has sliding-window attention (a window of 4)" in r.message and "export it with --hf or --vllm" in r.message
    assert not os.path.exists(tmp_path / "litert")
