"""The GGUF metadata llama.cpp reads for each architecture, named by the `gguf` package.

A plan's `hparams` use the short names below; each maps onto `gguf.Keys` and a value type.
llama.cpp fails to load a llama without the context length or the epsilon, and silently
uses 10000 for a missing `rope.freq_base`: the matcher always sets it for rotary models.
"""
from __future__ import annotations

import gguf

from ..dtypes import BY_NAME, QUANTIZED, STORED

# short name -> (Keys class, attribute, writer method)
HPARAM_KEYS = {
    "vocab_size": ("LLM", "VOCAB_SIZE", "add_uint32"),
    "context_length": ("LLM", "CONTEXT_LENGTH", "add_uint32"),
    "embedding_length": ("LLM", "EMBEDDING_LENGTH", "add_uint32"),
    "block_count": ("LLM", "BLOCK_COUNT", "add_uint32"),
    "feed_forward_length": ("LLM", "FEED_FORWARD_LENGTH", "add_uint32"),
    "head_count": ("Attention", "HEAD_COUNT", "add_uint32"),
    "head_count_kv": ("Attention", "HEAD_COUNT_KV", "add_uint32"),
    "rms_eps": ("Attention", "LAYERNORM_RMS_EPS", "add_float32"),
    "ln_eps": ("Attention", "LAYERNORM_EPS", "add_float32"),
    "key_length": ("Attention", "KEY_LENGTH", "add_uint32"),
    "value_length": ("Attention", "VALUE_LENGTH", "add_uint32"),
    "rope_dim": ("Rope", "DIMENSION_COUNT", "add_uint32"),
    "freq_base": ("Rope", "FREQ_BASE", "add_float32"),
    # gemma3's layers of two kinds: with a sliding window (which ones: one bool per layer) and without
    "freq_base_swa": ("Rope", "FREQ_BASE_SWA", "add_float32"),
    "sliding_window": ("Attention", "SLIDING_WINDOW", "add_uint32"),
    "sliding_window_pattern": ("Attention", "SLIDING_WINDOW_PATTERN", "add_array"),
    # gemma2's caps c * tanh(x / c) on the attention's scores and on the logits
    "attn_softcap": ("LLM", "ATTN_LOGIT_SOFTCAPPING", "add_float32"),
    "final_softcap": ("LLM", "FINAL_LOGIT_SOFTCAPPING", "add_float32"),
}

FILE_TYPE = {**{n: getattr(gguf.LlamaFileType, BY_NAME[n].gguf_file_type) for n in STORED},
             **{n: getattr(gguf.LlamaFileType, t) for n, t in QUANTIZED.items()}}


def key(short: str, arch: str) -> str:
    cls, attr, _ = HPARAM_KEYS[short]
    return getattr(getattr(gguf.Keys, cls), attr).format(arch=arch)


def arch_name(arch: str) -> str:
    """The architecture string as gguf.MODEL_ARCH_NAMES spells it (checks it exists)."""
    return gguf.MODEL_ARCH_NAMES[getattr(gguf.MODEL_ARCH, arch.upper())]


def add_hparams(w: "gguf.GGUFWriter", plan, name: str, dtype: str) -> None:
    arch = arch_name(plan.arch)
    w.add_name(name)
    w.add_file_type(int(FILE_TYPE[dtype]))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for short, value in plan.hparams.items():
        _, _, method = HPARAM_KEYS[short]
        getattr(w, method)(key(short, arch), value)


def tensor_name(arch: str, t) -> str:
    """`blk.0.attn_q.weight` for a TensorPlan, checked against the architecture's list."""
    march = getattr(gguf.MODEL_ARCH, arch.upper())
    mt = getattr(gguf.MODEL_TENSOR, t.name)
    if mt not in gguf.MODEL_TENSORS[march]:
        raise ValueError(f"{arch} has no tensor {t.name}")  # a bug in an architecture table
    base = gguf.TENSOR_NAMES[mt]
    if t.block is not None:
        base = base.format(bid=t.block)
    return f"{base}.{t.suffix}"
