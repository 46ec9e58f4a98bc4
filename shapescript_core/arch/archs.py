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

`SHAPE` says, for E3313, what each architecture has at each place a model can depart.
"""
from __future__ import annotations

# rope style llama.cpp applies per architecture: "interleaved" (LLAMA_ROPE_TYPE_NORM)
# or "half" (LLAMA_ROPE_TYPE_NEOX)
ROPE_STYLE = {"llama": "interleaved", "qwen2": "half", "qwen3": "half", "gemma3": "half", "gemma2": "half"}

SHAPE = {
    "llama": {
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
    },
    "gpt2": {
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
    },
    "gemma3": {
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
    },
}
SHAPE["qwen2"] = SHAPE["llama"]
SHAPE["gemma2"] = dict(SHAPE["gemma3"], qk="rope(linear(h)) split into heads",
                       output="rms_norm(x) into the token embedding (tied)")
SHAPE["qwen3"] = dict(SHAPE["llama"], bias="no biases", v="linear(h) split into heads, not normalized")


def has(arch: str, place: str) -> str:
    return SHAPE[arch][place]
