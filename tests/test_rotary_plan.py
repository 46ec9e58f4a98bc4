"""A language model's rotary positions as one table (compile/rotary_plan.py): the `--hf`
export computes them once, in `model.model.rotary_emb` with `config.rope_parameters`, as
transformers' own Llama does, when every rope rotates by the positions with one theta,
style and the head width; otherwise each rope computes its own, and the plan says why
(E3318 for LiteRT's split cache).

The contract LiteRT-Torch's split cache relies on is checked on the real export with real
transformers: its `rotary_emb` gives transformers' Llama tables, and a model whose
`rotary_emb` is swapped for the tables of other positions computes what the model
computes at those positions (the table is all any rope reads)."""
from __future__ import annotations

import json
import os

import pytest

from compile_support import Program
from shapescript_core.compile.rotary_plan import Rotary

HEAD = """
dim V  = 64
dim D  = 32
dim H  = 4
dim Dh = D / H
dim P  = 16

model Lm:
    embed: [V D]
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wpe: [P D]
    lm_head: [V D]
"""


def _lm(q_rope: str, k_rope: str, pos_type: str = "i64", extra: str = "") -> str:
    return HEAD + f"""
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] {pos_type}) -> [b n V]:
    x = embedding(ids, m.embed){extra}
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh){q_rope}
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh){k_rope}
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)))
    return linear(x, m.lm_head)
"""


def _plan(src: str):
    art = Program(src).compile("forward").art
    return art.generator.rotary_plan, art


def test_ropes_by_the_positions_with_one_theta_and_style_are_one_table():
    plan, art = _plan(_lm(" |> rope(pos, theta=500.0)", " |> rope(pos, theta=500.0)"))
    assert plan == Rotary(500.0, "half", 8, 8)
    assert art.config["rope_parameters"] == {"rope_type": "default", "rope_theta": 500.0}
    assert "self.rotary_emb = RotaryEmbedding(config, 8, 'half')" in art.modeling
    assert "q = rope(" not in art.modeling and "k = rope(" not in art.modeling
    plan, _ = _plan(_lm(' |> rope(pos, style="interleaved")', ' |> rope(pos, style="interleaved")'))
    assert plan == Rotary(10000.0, "interleaved", 8, 8)


def test_a_partial_and_scaled_rope_is_one_table_of_its_width():
    """v0.3: the table rotates `rotary_dims` features, with the ropes' scaling; config.json
    says both (partial_rotary_factor, rope_type and its fields)."""
    rope = ' |> rope(pos, rotary_dims=4, scaling="linear", factor=2.0)'
    plan, art = _plan(_lm(rope, rope))
    assert plan == Rotary(10000.0, "half", 8, 4, "linear", (("factor", 2.0),))
    assert plan.rope_parameters() == {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0,
                                      "partial_rotary_factor": 0.5}
    assert "self.rotary_emb = RotaryEmbedding(config, 4, 'half')" in art.modeling
    plan, _ = _plan(_lm(rope, ' |> rope(pos, rotary_dims=4, scaling="linear", factor=4.0)'))
    assert plan == "the ropes differ in scaling (line 19): one table can't serve them all"


@pytest.mark.parametrize("q_rope, k_rope, pos_type, extra, reason", [
    (" |> rope(pos)", " |> rope(pos + 1)", "i64", "",
     "a rope rotates by computed positions (line 19), not by `pos` itself"),
    (" |> rope(pos, theta=500.0)", " |> rope(pos)", "i64", "",
     "the ropes differ in theta (line 19): one table can't serve them all"),
    (' |> rope(pos)', ' |> rope(pos, style="interleaved")', "i64", "",
     "the ropes differ in style (line 19): one table can't serve them all"),
    (" |> rope(pos)", " |> rope(pos)", "Index[P]", " + embedding(pos, m.wpe)",
     "the positions `pos` feed `embedding` (line 17) besides the ropes"),
    ("", "", "Index[P]", " + embedding(pos, m.wpe)",
     "the positions `pos` feed no rope (positions a rotary table can't hold)"),
])
def test_anything_else_keeps_a_rope_per_call_and_says_why(q_rope, k_rope, pos_type, extra, reason):
    plan, art = _plan(_lm(q_rope, k_rope, pos_type, extra))
    assert plan == reason
    assert "rotary_emb" not in art.modeling and "RotaryEmbedding" not in art.modeling


def test_a_rope_over_part_of_the_head_is_not_the_table():
    src = HEAD.replace("dim P  = 16", "dim P  = 16\ndim R  = Dh / 2") + """
fn half_rope(t: [b H n Dh], pos: [b n] i64) -> [b H n Dh]:
    a, c = t |> split(b H n (2 R) -> b H n R)
    return concat(rope(a, pos), c, over=R) |> rearrange(b H n R2 -> b H n R2)

fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(half_rope(q, pos), half_rope(k, pos), v, attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)))
    return linear(x, m.lm_head)
"""
    plan, _ = _plan(src)
    assert isinstance(plan, str) and "rotate 4 of the attention's 8 channels per head" in plan, plan


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_support import TINY, dim_flags, load_causal_lm, shapescript
    out = tmp_path_factory.mktemp("rotary") / "llama-hf"
    shapescript("export", os.path.join(os.path.dirname(__file__), "..", "examples", "llama.ss"), "--hf",
                "--random-weights", "--seed", "5", *dim_flags(TINY), "-o", out)
    model, _ = load_causal_lm(out)
    return out, model


def test_the_llama_exports_transformers_rotary_table(llama):
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    out, model = llama
    config = json.load(open(out / "config.json"))
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 500000.0}
    assert model.config.rope_parameters["rope_theta"] == 500000.0
    ref = LlamaRotaryEmbedding(LlamaConfig(hidden_size=256, num_attention_heads=4, head_dim=64,
                                           rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
    x = torch.zeros(1, 1, 256)
    position_ids = torch.tensor([[0, 3, 17, 250, 4000]])
    for got, want in zip(model.model.rotary_emb(x, position_ids), ref(x, position_ids)):
        assert got.shape == want.shape == (1, 5, 64)
        assert torch.allclose(got, want, atol=1e-6)


class _Tables(__import__("torch").nn.Module):
    """A rotary_emb that ignores the positions it is given: LiteRT's split cache's swap."""

    def __init__(self, original, positions):
        super().__init__()
        self.original, self.positions = original, positions

    def forward(self, x, position_ids):
        return self.original(x, self.positions)


def test_every_rope_reads_the_table_and_nothing_else_reads_the_positions(llama):
    import torch
    _, model = llama
    ids = torch.tensor([[5, 17, 42, 99, 3, 250]])
    shifted = torch.tensor([[9, 11, 12, 20, 21, 30]])  # not a shift: rope sees relative positions
    ones = torch.ones_like(ids)  # a mask given: transformers reads gaps in position_ids as packed sequences
    with torch.no_grad():
        want = model(ids, attention_mask=ones, position_ids=shifted, use_cache=False).logits
        plain = model(ids, attention_mask=ones, use_cache=False).logits
        original = model.model.rotary_emb
        model.model.rotary_emb = _Tables(original, shifted)
        try:
            got = model(ids, attention_mask=ones, use_cache=False).logits  # positions 0..5 given, the table has the others
        finally:
            model.model.rotary_emb = original
    assert (want - plain).abs().max() > 1e-3  # the positions matter
    assert torch.equal(got, want)
