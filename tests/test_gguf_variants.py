"""Variants must not matter: each program of tests/programs/gguf (and conformance's
gpt2.ss) exports with `--gguf`, is recognised as its architecture, and its logits in real
llama.cpp match transformers' own model (LlamaForCausalLM, Qwen2ForCausalLM,
GPT2LMHeadModel) built from the same tensors within 1e-4 (f32, f32 KV cache) -- gpt2
within 3e-3, since llama.cpp's CPU GELU reads an f16 table (see docs/serving-engines.md);
transformers loads each GGUF back with the same logits.

Each case is data: the program, the transformers model, and how its state dict maps
onto the program's param paths (fused projections concatenated in the program's row
order, interleaved rope rows permuted as the program's layout needs).
"""
import os
from dataclasses import dataclass, field

import pytest

np = pytest.importorskip("numpy")

from gguf_support import (CONFORMANCE, TOKENS, export_gguf, hf_gpt2, hf_llama, hf_logits, llama_cpp_logits,
                          llama_to_source, max_diff, program, save_weights, state)

L = 2


def _heads_to_interleaved(w, heads):  # rotate-half rows -> pairs (what GPT-J style rope reads)
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def variant_names(sd):
    out = {"tokens": sd["model.embed_tokens.weight"], "final_norm": sd["model.norm.weight"],
           "head": sd["lm_head.weight"]}
    for i in range(L):
        p, s = f"blocks.{i}.", f"model.layers.{i}."
        out[p + "pre_attn"] = sd[s + "input_layernorm.weight"]
        out[p + "pre_ffn"] = sd[s + "post_attention_layernorm.weight"]
        for a, b in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"), ("out", "o_proj")):
            out[p + "sa." + a] = sd[s + f"self_attn.{b}.weight"]
        for a in ("gate", "up", "down"):
            out[p + a] = sd[s + f"mlp.{a}_proj.weight"]
    return out


def fused(sd):
    out = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"],
           "lm_head": sd["lm_head.weight"]}
    for i in range(L):
        p, s = f"layers.{i}.", f"model.layers.{i}."
        a = s + "self_attn."
        out[p + "attn_norm"] = sd[s + "input_layernorm.weight"]
        out[p + "mlp_norm"] = sd[s + "post_attention_layernorm.weight"]
        out[p + "wq"] = sd[a + "q_proj.weight"]
        out[p + "w_kv"] = np.concatenate([sd[a + "k_proj.weight"], sd[a + "v_proj.weight"]])  # (2 Hkv Dh)
        out[p + "wo"] = sd[a + "o_proj.weight"]
        out[p + "w_gu"] = np.concatenate([sd[s + "mlp.gate_proj.weight"], sd[s + "mlp.up_proj.weight"]])
        out[p + "w_down"] = sd[s + "mlp.down_proj.weight"]
    return out


def qkv_dh_h(sd, H=4, Dh=64):
    out = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"],
           "lm_head": sd["lm_head.weight"]}
    for i in range(L):
        p, s = f"layers.{i}.", f"model.layers.{i}."
        a = s + "self_attn."
        parts = [sd[a + f"{x}_proj.weight"].reshape(H, Dh, -1).transpose(1, 0, 2).reshape(H * Dh, -1)
                 for x in "qkv"]  # rows (3 Dh H)
        out[p + "w_qkv"] = np.concatenate(parts)
        out[p + "attn_norm"] = sd[s + "input_layernorm.weight"]
        out[p + "mlp_norm"] = sd[s + "post_attention_layernorm.weight"]
        out[p + "wo"] = sd[a + "o_proj.weight"]
        for x in ("gate", "up", "down"):
            out[p + f"w_{x}"] = sd[s + f"mlp.{x}_proj.weight"]
    return out


def interleaved_tied(sd, H=4, Hkv=2):
    out = llama_to_source(sd, L)
    del out["lm_head"]
    for i in range(L):
        p = f"layers.{i}."
        q, k = out.pop(p + "attn.wq"), out.pop(p + "attn.wk")
        out[p + "wq"], out[p + "wk"] = _heads_to_interleaved(q, H), _heads_to_interleaved(k, Hkv)
        for x in ("wv", "wo", "w_gate", "w_up", "w_down"):
            out[p + x] = out.pop(p + ("attn." if x in ("wv", "wo") else "mlp.") + x)
    return out


def qwen2(sd):
    out = llama_to_source(sd, L)
    for i in range(L):
        p, s = f"layers.{i}.", f"model.layers.{i}.self_attn."
        for x in "qkv":
            out[p + f"attn.b{x}"] = sd[s + f"{x}_proj.bias"]
        for x in ("w_gate", "w_up", "w_down"):
            out[p + x] = out.pop(p + "mlp." + x)
    return out


def qwen2_interleaved(sd, H=4, Hkv=2):
    out = qwen2(sd)
    for i in range(L):
        p = f"layers.{i}.attn."
        for x, heads in (("q", H), ("k", Hkv)):
            out[p + f"w{x}"] = _heads_to_interleaved(out[p + f"w{x}"], heads)
            out[p + f"b{x}"] = _heads_to_interleaved(out[p + f"b{x}"], heads)
    return out


def llama_transposed(sd):
    out = llama_to_source(sd, L)
    return {k: (v.T if v.ndim == 2 and ("attn." in k or "mlp." in k) else v) for k, v in out.items()}


def gpt2(sd):
    t = "transformer."
    out = {"wte": sd[t + "wte.weight"], "wpe": sd[t + "wpe.weight"], "lnf_w": sd[t + "ln_f.weight"],
           "lnf_b": sd[t + "ln_f.bias"]}
    for i in range(L):
        p, s = f"layers.{i}.", f"{t}h.{i}."
        for a, b in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[p + a + "_w"], out[p + a + "_b"] = sd[s + b + ".weight"], sd[s + b + ".bias"]
        for (w, bb), conv in ((("w_qkv", "b_qkv"), "attn.c_attn"), (("w_o", "b_o"), "attn.c_proj"),
                              (("w_fc", "b_fc"), "mlp.c_fc"), (("w_proj", "b_proj"), "mlp.c_proj")):
            out[p + w] = sd[s + conv + ".weight"].T  # Conv1D stores [in, out]
            out[p + bb] = sd[s + conv + ".bias"]
    return out


def group_major(sd, H=4, Hkv=2, Dh=64):
    """The program's query head g*Hkv + j reads key/value head j; transformers' head j*G + g does."""
    out = llama_to_source(sd, L)
    G = H // Hkv
    order = [j * G + g for g in range(G) for j in range(Hkv)]  # program head -> transformers head
    for i in range(L):
        p = f"layers.{i}.attn."
        out[p + "wq"] = out[p + "wq"].reshape(H, Dh, -1)[order].reshape(H * Dh, -1)
        out[p + "wo"] = out[p + "wo"].reshape(-1, H, Dh)[:, order].reshape(-1, H * Dh)
    return out


def gpt2_separate(sd, D=256):
    out = gpt2(sd)
    for i in range(L):
        p = f"layers.{i}."
        w, b = out.pop(p + "w_qkv"), out.pop(p + "b_qkv")
        for j, x in enumerate("qkv"):
            out[p + f"w{x}"], out[p + f"b{x}"] = w[j * D:(j + 1) * D], b[j * D:(j + 1) * D]
        out.pop(p + "b_o")  # the program has none: the transformers model's is zeroed
    return {k.replace("layers.", "blocks."): v for k, v in out.items()}


def gpt2_conv1d(sd):
    """transformers' GPT-2 state dict as it is (Conv1D [in out]), under the program's names."""
    t = "transformer."
    out = {"wte": sd[t + "wte.weight"], "wpe": sd[t + "wpe.weight"], "ln_f_w": sd[t + "ln_f.weight"],
           "ln_f_b": sd[t + "ln_f.bias"]}
    for i in range(L):
        p, s = f"h.{i}.", f"{t}h.{i}."
        for a, b in (("ln_1", "ln_1"), ("ln_2", "ln_2"), ("c_attn", "attn.c_attn"), ("c_proj", "attn.c_proj"),
                     ("c_fc", "mlp.c_fc"), ("mlp_proj", "mlp.c_proj")):
            out[p + a + "_w"], out[p + a + "_b"] = sd[s + b + ".weight"], sd[s + b + ".bias"]
    return out


def hf_gpt2_no_out_bias(seed):
    import torch
    m = hf_gpt2(seed=seed)
    with torch.no_grad():
        for blk in m.transformer.h:
            blk.attn.c_proj.bias.zero_()
    return m


@dataclass
class Case:
    id: str
    source: str
    hf: callable
    to_source: callable
    arch: str
    dims: dict = field(default_factory=dict)
    tied: bool = False
    hf_class: str = "LlamaForCausalLM"
    tolerance: float = 1e-4
    load_kwargs: dict = field(default_factory=dict)  # config keys transformers' GGUF loader misses


CASES = [
    Case("renamed-split-swapped", program("llama_variant.ss"), lambda: hf_llama(seed=1), variant_names, "llama"),
    Case("fused-kv-and-gate-up", program("llama_fused.ss"), lambda: hf_llama(seed=2), fused, "llama"),
    Case("matmul-in-out", program("llama_matmul.ss"), lambda: hf_llama(seed=12), llama_transposed, "llama"),
    Case("repeat-group-major", program("llama_repeat_group_major.ss"), lambda: hf_llama(seed=9), group_major,
         "llama"),
    Case("fused-qkv-dh-before-h", program("llama_qkv.ss"), lambda: hf_llama(seed=3, Hkv=4), qkv_dh_h, "llama"),
    Case("interleaved-rope-tied", program("llama_interleaved_tied.ss"),
         lambda: hf_llama(seed=4, theta=10000.0, eps=1e-6, tied=True), interleaved_tied, "llama", tied=True),
    Case("qwen2", program("qwen2.ss"), lambda: hf_llama(seed=5, theta=1000000.0, eps=1e-6, qwen2=True), qwen2,
         "qwen2", hf_class="Qwen2ForCausalLM"),
    Case("qwen2-interleaved", program("qwen2_interleaved.ss"),
         lambda: hf_llama(seed=10, theta=1000000.0, eps=1e-6, qwen2=True), qwen2_interleaved, "qwen2",
         hf_class="Qwen2ForCausalLM"),
    Case("gpt2", os.path.join(CONFORMANCE, "gpt2.ss"), lambda: hf_gpt2(seed=6), gpt2, "gpt2",
         dims={"V": 256, "D": 256, "H": 4, "P": 64, "L": 2}, tied=True, hf_class="GPT2LMHeadModel",
         tolerance=3e-3, load_kwargs={"n_positions": 64, "vocab_size": 256}),
    Case("gpt2-conv1d-matmul", program("gpt2_matmul.ss"), lambda: hf_gpt2(seed=11), gpt2_conv1d, "gpt2",
         tied=True, hf_class="GPT2LMHeadModel", tolerance=3e-3, load_kwargs={"n_positions": 64, "vocab_size": 256}),
    Case("gpt2-separate-qkv", program("gpt2_separate.ss"), lambda: hf_gpt2_no_out_bias(8), gpt2_separate, "gpt2",
         tied=True, hf_class="GPT2LMHeadModel", tolerance=3e-3, load_kwargs={"n_positions": 64, "vocab_size": 256}),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def case(request, tmp_path_factory):
    c = request.param
    d = tmp_path_factory.mktemp(c.id)
    model = c.hf()
    weights = save_weights(str(d / "w.safetensors"), c.to_source(state(model)))
    out = str(d / f"{c.id}.gguf")
    r = export_gguf(c.source, out, weights, c.dims)
    return {"case": c, "model": model, "file": out, "stderr": r.stderr, "ref": hf_logits(model, TOKENS)}


def test_recognised_as_its_architecture(case):
    from gguf import GGUFReader
    c = case["case"]
    assert f"(gguf: {c.arch}," in case["stderr"]
    r = GGUFReader(case["file"])
    assert r.fields["general.architecture"].contents() == c.arch
    names = {t.name for t in r.tensors}
    assert ("output.weight" in names) != c.tied
    if c.arch == "gpt2":
        assert {"position_embd.weight", "blk.1.attn_qkv.bias", "blk.0.ffn_up.bias"} <= names
    else:
        assert r.fields[f"{c.arch}.rope.freq_base"].contents() > 0
        assert {"blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.ffn_gate.weight"} <= names
        assert ("blk.0.attn_q.bias" in names) == (c.arch == "qwen2")


def test_llama_cpp_logits_match_transformers(case):
    got = llama_cpp_logits(case["file"], TOKENS)
    assert max_diff(got, case["ref"]) < case["case"].tolerance
    if case["case"].arch == "gpt2":
        # the rest is llama.cpp's f16 GELU table: measured 1.5e-3 -> 2.0e-4 with one build,
        # 5.04e-4 with a build for another CPU (ggml's kernels sum in a CPU-dependent order)
        assert max_diff(got, hf_logits(with_f16_table_gelu(case["model"]), TOKENS)) < 1e-3


def with_f16_table_gelu(model):
    """The GPT-2 with GELU evaluated as ggml's CPU kernel does: an f16 input looked up in a
    table of f16 results (x <= -10 -> 0, x >= 10 -> x)."""
    import copy

    import torch

    class F16TableGelu(torch.nn.Module):
        def forward(self, x):
            y = torch.nn.functional.gelu(x.half().float(), approximate="tanh").half().float()
            return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, y))
    m = copy.deepcopy(model)
    for blk in m.transformer.h:
        blk.mlp.act = F16TableGelu()
    return m


def test_transformers_loads_the_gguf_back(case):
    import torch
    from transformers import AutoModelForCausalLM
    path = case["file"]
    m = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                             dtype=torch.float32, **case["case"].load_kwargs).eval()
    assert type(m).__name__ == case["case"].hf_class
    assert max_diff(hf_logits(m, TOKENS), case["ref"]) < 1e-4


def test_a_repeat_in_a_helper_gives_the_same_key_value_heads_as_hf(tmp_path):
    """`fn widen(t: [b Hkv n Dh]) -> [b H n Dh]`: gguf's head_count_kv and the hf/vllm
    config's num_key_value_heads are both Hkv (test_export_hf checks the hf side)."""
    from gguf import GGUFReader
    from hf_support import TINY, widened_llama
    src = widened_llama(tmp_path)
    out = str(tmp_path / "widen.gguf")
    export_gguf(str(src), out, None, TINY)
    r = GGUFReader(out)
    assert r.fields["llama.attention.head_count"].contents() == TINY["H"]
    assert r.fields["llama.attention.head_count_kv"].contents() == TINY["Hkv"]
