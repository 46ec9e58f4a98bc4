"""The llama.cpp architectures the GGUF export supports, as the matcher describes them.

Each architecture is told apart by what its graph computes, never by names:
- `llama`: token embedding; per block x + attn(rms_norm(x)), then x + mlp(rms_norm(x)),
  attention with rope on q and k, grouped-query through `repeat`, an MLP
  down(silu(gate(h)) * up(h)); a final rms_norm; an output layer (or the tied embedding).
  llama.cpp rotates interleaved pairs: half-style Q/K rows are permuted.
- `qwen2`: llama with biases on the q, k and v projections. llama.cpp rotates halves
  (NEOX): interleaved-style Q/K rows are permuted the other way.
- `qwen3`: llama with an rms_norm of each query and key head over its width, before rope
  (`attn_q_norm`, `attn_k_norm`), no biases. llama.cpp rotates halves, as for qwen2.
- `gpt2`: token plus learned position embeddings; per block layer_norm sublayers, q, k, v
  from one fused projection or separate ones (stacked into one attn_qkv), no rope, an MLP
  proj(gelu_tanh(fc(h))), biases everywhere (zeros are written where the source has
  none); a final layer_norm.
- `phi2`: token embedding; per block one layer_norm h of x read by attention and the MLP
  side by side, x + attn(h) + mlp(h) (a parallel block, any grouping of the sum); rope over
  the first `rope.dimension_count` features of each head (v0.3's rotary_dims), q, k, v
  projections, an MLP proj(gelu_tanh(fc(h))), biases on every projection (zeros are
  written where the source has none; llama.cpp requires them) and an output bias of zeros
  (the serving rules, E3302, give the source's output layer none: a real Phi-2's lm_head
  bias has no place); a final layer_norm; an output layer of its own (written from the
  embedding where the source ties them). llama.cpp rotates halves (NEOX) and scales the
  queries by 1/sqrt(Dh).
- `gptneox`: gpt2 without position embeddings: rope over the first `rope.dimension_count`
  features of each head (rotating halves), and its blocks either side by side with a
  norm each, x + attn(layer_norm(x)) + mlp(layer_norm(x)) (`use_parallel_residual`), or in
  turn; one attn_qkv, biases everywhere, an output layer of its own with no bias.
- `gemma3`: the token embedding times sqrt(D); per block x + rms_norm(attn(rms_norm(x)))
  then x + rms_norm(mlp(rms_norm(x))) (a norm before and after each sublayer); queries
  and keys normalized per head before rope (`attn_q_norm`, `attn_k_norm`), a head width of
  its own (`key_length`), an MLP down(gelu_tanh(gate(h)) * up(h)), no biases. Norm weights
  may be used as (1 + w): the file stores 1 + w, as llama.cpp's converter does. Layers
  with a sliding window share one window and one rope base (`rope.freq_base_swa`), the
  others another (`rope.freq_base`); `sliding_window_pattern` says which layer is which.
  llama.cpp scales the queries by 1/sqrt(Dh) (1/sqrt(D/H) at 62 layers, its 27B): another
  scale (`query_pre_attn_scalar`) is folded into the query norm's weights. llama.cpp
  rotates halves (NEOX).
- `gemma2`: gemma3 without the per-head norms (another scale is folded into the query
  rows), one rope theta, the output layer tied to the token embedding. llama.cpp's gemma2
  caps the attention's scores and the logits by c * tanh(x / c), always (50 and 30 by
  default); a source has no such cap (`scaled_dot_product_attention` has none, and the
  logits come straight from the output layer), so caps too large to change anything are
  written. A real Gemma 2 caps at 50 and 30: no source says that (see docs).

Every llama.cpp architecture multiplies by a norm's stored weight, so a norm weight used as
`c + w` is written as c + w in any of them. Only gemma2 and gemma3 run a sliding window: a window in
another architecture is a departure, never dropped.

Each family is one `Family` entry of `FAMILIES`, read by every target and the importer:
its E3313 words (`shape`: what it has at each place a model can depart), its roles (the
tensors it has, in our vocabulary: roles.py), the rope style llama.cpp applies, the
Hugging Face `model_type`s read as it and how their tensors differ from llama.cpp's
layout, the query scale llama.cpp assumes, and what llama.cpp takes when a GGUF file
doesn't say. How a model is told to be one family stays in the matcher (`match`,
`sublayers`): what its graph computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    name: str                  # llama.cpp's architecture name ("llama"), the GGUF file's too
    shape: dict                # place -> what the family has there, for E3313 (`has`)
    roles: frozenset           # the tensors it has (roles.py); biases are a suffix, not a role
    rope_style: str | None     # how llama.cpp rotates: "interleaved" (LLAMA_ROPE_TYPE_NORM) or
                               # "half" (LLAMA_ROPE_TYPE_NEOX); None: no rope
    norm: str = "rms_norm"     # the op of every norm ("layer_norm": with a bias too)
    scaled_embedding: bool = False  # the token embedding times sqrt(D)
    sliding_window: bool = False    # llama.cpp runs a sliding window in it (per layer)
    biased: bool = False            # every projection has a bias (zeros written where the source has
                                    # none), the MLP is proj(gelu_tanh(fc(h))): gpt2, phi2
    parallel: bool = False          # attention and the MLP side by side: x + attn(h) + mlp(h2)
    one_norm: bool = False          # ... reading one norm, h2 = h (phi2)
    fused_qkv: bool = False         # q, k and v in one attn_qkv tensor, rows [q; k; v] (gpt2, gptneox)
    mlp_gelu: tuple = ("gelu_tanh",)  # the biased MLP's activations llama.cpp computes as its GELU: the
                                      # tanh approximation from a float16 table (gptneox: exact gelu too)
    own_output: bool = False        # an output weight even where the source ties it (llama.cpp requires one)
    output_bias: bool = False       # the output layer has a bias (zeros: E3302 allows the source none)
    rope_freqs: bool = False        # llama.cpp loads per-frequency rope divisors (llama3 scaling); its
                                    # qwen2 and qwen3 refuse a file that has them
    experts: bool = False           # v0.3: llama.cpp runs a mixture of experts in the MLP's place
                                    # (ffn_gate_inp, ffn_{gate,up,down}_exps: llama, qwen3moe)
    partial_rotary: bool = False    # llama.cpp rotates the first rope.dimension_count features of a
                                    # head (its llama, qwen2, qwen3 and gemmas insist on all of them)
    # llama.cpp's query scale is 1/sqrt(Dh), or 1/sqrt(D / H) at this many blocks (its 27B)
    wide_scale_blocks: int | None = None
    # what llama.cpp assumes when a GGUF file doesn't say (short names as in the importer)
    gguf_defaults: dict = field(default_factory=dict)
    # ---- a Hugging Face checkpoint of the family
    hf_model_types: tuple = ()         # config.json's model_type values read as it
    hf_transposed: frozenset = frozenset()  # roles stored [in out] (GPT-2's Conv1D)
    hf_qkv_by_head: bool = False       # attn_qkv's rows head by head, (H, 3, Dh) (GPT-NeoX's)
    hf_eps_key: str = "rms_norm_eps"   # config.json's norm epsilon
    hf_norm_offset: float = 0.0        # norm weights used as (c + w): stored c + w (Gemma's 1 + w)
    hf_scale_into: str | None = None   # the role `query_pre_attn_scalar` is folded into, where
                                       # llama.cpp's own scale differs


_LLAMA_SHAPE = {
    "stream": "adds each sublayer's output to the residual stream and nothing else",
    "embedding": "the token embedding alone at the start of the residual stream",
    "norm": "rms_norm",
    "block": "attention then an MLP, each as x + sublayer(rms_norm(x))",
    "mlp": "silu(gate(h)) * up(h) into a down projection (SwiGLU)",
    "qk": "rope(linear(h)) split into heads",
    "v": "linear(h) split into heads",
    "positions": "rope on the queries and keys",
    "bias": "no biases (qwen2 has them on q, k and v only)",
    "output": "rms_norm(x) into the output layer",
    "scale": "the default 1/sqrt(Dh)",
    "window": "full attention (llama.cpp runs a sliding window only as gemma2 or gemma3)",
    "experts": "a mixture of experts routed by the softmax of the K chosen router logits, each expert "
               "silu(gate(h)) * up(h) into its down projection (Mixtral), or a dense MLP",
}
_NO_EXPERTS = "a dense MLP (llama.cpp runs a mixture of experts as llama or qwen3moe)"
_GPT2_SHAPE = {
    "stream": "adds each sublayer's output to the residual stream and nothing else",
    "embedding": "token plus position embeddings at the start of the residual stream",
    "norm": "layer_norm",
    "block": "attention then an MLP, each as x + sublayer(layer_norm(x))",
    "mlp": "linear(h) into gelu_tanh into a second linear",
    "qk": "linear(h) split into q, k and v heads",
    "v": "linear(h) split into q, k and v heads",
    "positions": "learned position embeddings, no rope",
    "bias": "biases on every projection",
    "output": "layer_norm(x) into the output layer",
    "scale": "the default 1/sqrt(Dh)",
    "window": "full attention (llama.cpp runs a sliding window only as gemma2 or gemma3)",
    "experts": _NO_EXPERTS,
}
_PHI2_SHAPE = dict(
    _GPT2_SHAPE,
    embedding="the token embedding alone at the start of the residual stream",
    block="attention and an MLP side by side, x + attn(h) + mlp(h) with one h = layer_norm(x)",
    qk="rope(linear(h)) split into heads, rotating the halves of the first rope.dimension_count features",
    v="linear(h) split into heads",
    positions="rope on the queries and keys",
    bias="biases on every projection",
)
_GPTNEOX_SHAPE = dict(
    _GPT2_SHAPE,
    embedding="the token embedding alone at the start of the residual stream",
    block="attention and an MLP, side by side as x + attn(layer_norm(x)) + mlp(layer_norm(x)) or in turn",
    qk="rope(linear(h)) split into q, k and v heads, rotating the halves of the first rope.dimension_count "
       "features",
    positions="rope on the queries and keys",
    bias="biases on every projection, none on the output layer",
)
_GEMMA3_SHAPE = {
    "stream": "adds each sublayer's normalized output to the residual stream and nothing else",
    "embedding": "the token embedding times sqrt(D) at the start of the residual stream",
    "norm": "rms_norm",
    "block": "attention then an MLP, each as x + rms_norm(sublayer(rms_norm(x)))",
    "mlp": "gelu_tanh(gate(h)) * up(h) into a down projection (GeGLU)",
    "qk": "rope(rms_norm(linear(h))) split into heads, each head normalized",
    "v": "linear(h) split into heads, not normalized",
    "positions": "rope on the queries and keys",
    "bias": "no biases",
    "output": "rms_norm(x) into the output layer",
    "scale": "one number per layer",
    "window": "one sliding window for the windowed layers",
    "experts": _NO_EXPERTS,
}

_LLAMA_ROLES = frozenset({"token_embedding", "output_norm", "output", "attn_norm", "attn_q", "attn_k",
                          "attn_v", "attn_out", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"})
_GEMMA2_ROLES = (_LLAMA_ROLES - {"output"}) | {"attn_post_norm", "ffn_post_norm"}  # tied output
_EXPERT_ROLES = frozenset({"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"})  # v0.3

FAMILIES = {f.name: f for f in (
    Family("llama", _LLAMA_SHAPE, _LLAMA_ROLES | _EXPERT_ROLES, "interleaved", rope_freqs=True, experts=True,
           hf_model_types=("llama", "mistral", "mixtral")),
    Family("qwen2", dict(_LLAMA_SHAPE, experts=_NO_EXPERTS), _LLAMA_ROLES, "half", hf_model_types=("qwen2",)),
    Family("qwen3", dict(_LLAMA_SHAPE, bias="no biases", v="linear(h) split into heads, not normalized",
                         experts=_NO_EXPERTS + " (qwen3moe: with experts)"),
           _LLAMA_ROLES | {"attn_q_norm", "attn_k_norm"}, "half", hf_model_types=("qwen3",)),
    Family("qwen3moe", dict(_LLAMA_SHAPE, bias="no biases", v="linear(h) split into heads, not normalized",
                            mlp="a mixture of experts in every block",
                            experts="a mixture of experts in every block, routed by the softmax of the K chosen "
                                    "router logits (Qwen3-MoE's with norm_topk_prob)"),
           (_LLAMA_ROLES - {"ffn_gate", "ffn_up", "ffn_down"}) | _EXPERT_ROLES | {"attn_q_norm", "attn_k_norm"},
           "half", experts=True, hf_model_types=("qwen3_moe",)),
    Family("gpt2", _GPT2_SHAPE,
           frozenset({"token_embedding", "position_embedding", "output_norm", "output", "attn_norm",
                      "attn_qkv", "attn_out", "ffn_norm", "ffn_up", "ffn_down"}), None, norm="layer_norm",
           biased=True, fused_qkv=True, hf_model_types=("gpt2",),
           hf_transposed=frozenset({"attn_qkv", "attn_out", "ffn_up", "ffn_down"}), hf_eps_key="layer_norm_epsilon"),
    Family("phi2", _PHI2_SHAPE,
           frozenset({"token_embedding", "output_norm", "output", "attn_norm", "attn_q", "attn_k", "attn_v",
                      "attn_qkv", "attn_out", "ffn_norm", "ffn_up", "ffn_down"}), "half", norm="layer_norm", biased=True,
           parallel=True,
           one_norm=True, own_output=True, output_bias=True, partial_rotary=True, hf_model_types=("phi",),
           hf_eps_key="layer_norm_eps"),
    Family("gptneox", _GPTNEOX_SHAPE,
           frozenset({"token_embedding", "output_norm", "output", "attn_norm", "attn_qkv", "attn_out", "ffn_norm",
                      "ffn_up", "ffn_down"}), "half", norm="layer_norm", biased=True, parallel=True, fused_qkv=True,
           own_output=True, partial_rotary=True, mlp_gelu=("gelu_tanh", "gelu"), hf_model_types=("gpt_neox",),
           hf_qkv_by_head=True, hf_eps_key="layer_norm_eps"),
    Family("gemma2", dict(_GEMMA3_SHAPE, qk="rope(linear(h)) split into heads",
                          output="rms_norm(x) into the token embedding (tied)"),
           _GEMMA2_ROLES, "half", scaled_embedding=True, sliding_window=True, wide_scale_blocks=46,
           gguf_defaults={"attn_softcap": 50.0, "final_softcap": 30.0},  # llama.cpp caps always
           hf_model_types=("gemma2",), hf_norm_offset=1.0, hf_scale_into="attn_q"),
    Family("gemma3", _GEMMA3_SHAPE, _GEMMA2_ROLES | {"output", "attn_q_norm", "attn_k_norm"}, "half",
           scaled_embedding=True, sliding_window=True, wide_scale_blocks=62,
           gguf_defaults={"theta_swa": 10000.0},  # the windowed layers' rope base
           hf_model_types=("gemma3_text",), hf_norm_offset=1.0, hf_scale_into="attn_q_norm"),
)}

# config.json's model_type -> the family. Llama 2/3, SmolLM and TinyLlama checkpoints say
# "llama"; Mistral's are llama's layout; Gemma 3's text model (Gemma3ForCausalLM) says
# "gemma3_text".
HF_MODEL_TYPES = {t: f.name for f in FAMILIES.values() for t in f.hf_model_types}


def has(arch: str, place: str) -> str:
    return FAMILIES[arch].shape[place]


def names_in_words(last: str = " and ") -> str:
    """"llama, qwen2, ... and gemma3": every family, for the messages."""
    names = list(FAMILIES)
    return ", ".join(names[:-1]) + last + names[-1]
