"""Building blocks for the Hugging Face export tests: reference models from transformers,
their weights renamed to a ShapeScript program's param paths, and the export itself."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import checkout

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs" / "hf"
OK_PROGRAMS = Path(checkout.program("ok"))  # copies of the shared conformance cases
TINY = {"V": 256, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}  # head width 64
LAYERS = TINY["L"]


def shapescript(*args, check=True, timeout=300) -> subprocess.CompletedProcess:
    """Run the CLI under test and return its process; `check`: it must exit 0."""
    return checkout.shapescript(*args, check=check, timeout=timeout)


def dim_flags(dims: dict) -> list:
    out = []
    for k, v in dims.items():
        out += ["--dim", f"{k}={v}"]
    return out


def llama_reference(heads_kv=2, theta=500000.0, tied=False, seed=0):
    """transformers' own LlamaForCausalLM at the tiny size, with seeded random weights
    (norm weights too, so that a mix-up of them shows)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=LAYERS,
                      num_attention_heads=4, num_key_value_heads=heads_kv, head_dim=64, rms_norm_eps=1e-5,
                      rope_parameters={"rope_type": "default", "rope_theta": theta},
                      tie_word_embeddings=tied, attention_bias=False, mlp_bias=False)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    if tied:
        model.tie_weights()
    return model.eval()


def llama_state(model) -> dict:
    """The reference's tensors by role: {"embed", "norm", "lm_head", (i, "q") ...}."""
    sd = model.state_dict()
    out = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"],
           "lm_head": sd.get("lm_head.weight", sd["model.embed_tokens.weight"])}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out[i, "attn_norm"] = sd[p + "input_layernorm.weight"]
        out[i, "mlp_norm"] = sd[p + "post_attention_layernorm.weight"]
        for role, hf in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "o_proj")):
            out[i, role] = sd[p + f"self_attn.{hf}.weight"]
        for role, hf in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            out[i, role] = sd[p + f"mlp.{hf}.weight"]
    return out


def interleave_rows(w, heads: int):
    """Rotate-half rows (Hugging Face Llama) to the rows interleaved rotary pairs use."""
    width = w.shape[0] // heads
    return w.reshape(heads, 2, width // 2, w.shape[1]).transpose(1, 2).reshape(w.shape).contiguous()


def to_variant(name: str, r: dict) -> dict:
    """The reference's tensors under a variant program's param paths."""
    import torch
    out = {}
    if name in ("llama", "llama_split", "llama_interleaved", "llama_widen"):
        out.update({"embed": r["embed"], "norm": r["norm"], "lm_head": r["lm_head"]})
        for i in range(LAYERS):
            p = f"layers.{i}."
            q, k = r[i, "q"], r[i, "k"]
            if name == "llama_interleaved":
                q, k = interleave_rows(q, 4), interleave_rows(k, 2)
            out.update({p + "attn_norm": r[i, "attn_norm"], p + "mlp_norm": r[i, "mlp_norm"],
                        p + "attn.wq": q, p + "attn.wk": k, p + "attn.wv": r[i, "v"], p + "attn.wo": r[i, "o"],
                        p + "mlp.w_gate": r[i, "gate"], p + "mlp.w_up": r[i, "up"], p + "mlp.w_down": r[i, "down"]})
    elif name == "llama_renamed":
        out.update({"tokens": r["embed"], "final_norm": r["norm"], "unembed": r["lm_head"]})
        for i in range(LAYERS):
            p = f"stack.{i}."
            out.update({p + "pre_attn": r[i, "attn_norm"], p + "pre_ff": r[i, "mlp_norm"],
                        p + "sa.query": r[i, "q"], p + "sa.key": r[i, "k"], p + "sa.value": r[i, "v"],
                        p + "sa.out": r[i, "o"], p + "ff.gate": r[i, "gate"], p + "ff.up": r[i, "up"],
                        p + "ff.down": r[i, "down"]})
    elif name == "llama_fused":
        out.update({"embed": r["embed"], "norm": r["norm"]})
        for i in range(LAYERS):
            p = f"layers.{i}."
            out.update({p + "attn_norm": r[i, "attn_norm"], p + "mlp_norm": r[i, "mlp_norm"],
                        p + "w_qkv": torch.cat([r[i, "q"], r[i, "k"], r[i, "v"]]), p + "w_o": r[i, "o"],
                        p + "w_gate_up": torch.cat([r[i, "gate"], r[i, "up"]]), p + "w_down": r[i, "down"]})
    else:
        raise KeyError(name)
    return {k: v.contiguous() for k, v in out.items()}


# variant -> (source, reference options, dims)
VARIANTS = {
    "llama": (OK_PROGRAMS / "llama.ss", {}, TINY),
    "llama_renamed": (PROGRAMS / "llama_renamed.ss", {},
                      {"Vocab": 256, "Width": 256, "Heads": 4, "KvHeads": 2, "Hidden": 512, "Depth": 2}),
    "llama_split": (PROGRAMS / "llama_split.ss", {}, TINY),
    "llama_interleaved": ("interleaved", {}, TINY),  # the reference llama, rope in pairs (made below)
    "llama_widen": ("widen", {}, TINY),  # the reference llama, keys and values repeated in a helper
    "llama_fused": (PROGRAMS / "llama_fused.ss", {"heads_kv": 4, "theta": 10000.0, "tied": True},
                    {"V": 256, "D": 256, "H": 4, "F": 512, "L": 2}),
}


def interleaved_llama(tmp: Path) -> Path:
    """The reference llama with interleaved (GPT-J style) rotary positions."""
    text = (OK_PROGRAMS / "llama.ss").read_text()
    rope = "rope(pos, theta=500000.0)"
    assert text.count(rope) == 2
    out = tmp / "llama_interleaved.ss"
    out.write_text(text.replace(rope, 'rope(pos, theta=500000.0, style="interleaved")'))
    return out


WIDEN = """
fn widen(t: [b Hkv n Dh]) -> [b H n Dh]:
    return t |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
"""


def widened_llama(tmp: Path) -> Path:
    """The reference llama with the key/value repeat written in a helper function."""
    text = (OK_PROGRAMS / "llama.ss").read_text()
    for role in ("k", "v"):
        line = f"    {role} = {role} |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)\n"
        assert text.count(line) == 1
        text = text.replace(line, f"    {role} = widen({role})\n")
    out = tmp / "llama_widen.ss"
    out.write_text(text + WIDEN)
    return out


def export_variant(name: str, tmp: Path, target: str = "hf"):
    """(reference model, export directory) for a variant, exported from the reference's weights."""
    from safetensors.torch import save_file
    src, opts, dims = VARIANTS[name]
    if src == "interleaved":
        src = interleaved_llama(tmp)
    elif src == "widen":
        src = widened_llama(tmp)
    ref = llama_reference(**opts)
    weights = tmp / f"{name}.safetensors"
    save_file(to_variant(name, llama_state(ref)), str(weights))
    out = tmp / f"{name}-{target}"
    shapescript("export", src, f"--{target}", "--weights", weights, *dim_flags(dims), "-o", out)
    return ref, out


def load_causal_lm(out):
    from transformers import AutoModelForCausalLM
    model, info = AutoModelForCausalLM.from_pretrained(str(out), trust_remote_code=True, output_loading_info=True)
    return model.eval(), info
