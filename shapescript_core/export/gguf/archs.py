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

`SHAPE` says, for E3313, what each architecture has at each place a model can depart.
"""
from __future__ import annotations

# rope style llama.cpp applies per architecture: "interleaved" (LLAMA_ROPE_TYPE_NORM)
# or "half" (LLAMA_ROPE_TYPE_NEOX)
ROPE_STYLE = {"llama": "interleaved", "qwen2": "half", "qwen3": "half"}

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
    },
}
SHAPE["qwen2"] = SHAPE["llama"]
SHAPE["qwen3"] = dict(SHAPE["llama"], bias="no biases", v="linear(h) split into heads, not normalized")


def has(arch: str, place: str) -> str:
    return SHAPE[arch][place]
