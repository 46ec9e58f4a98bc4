"""The GGUF format's names, named by the `gguf` package: the one place they are spelled.

- Tensors: our roles (arch/roles.py) onto gguf-py's `MODEL_TENSOR` of each architecture
  (`ROLE_TENSORS`), so `tensor_name` spells a `TensorPlan` as llama.cpp reads it
  (`blk.0.attn_output.weight`), and back (`role_key`: a GGUF tensor name, or the one
  gguf-py's `TensorNameMap` gives a Hugging Face key, as our `roles.tensor_key`). A name
  no role has stays as it is (the import's diagnostics quote it).
- Metadata: a plan's `hparams` use the short names below; each maps onto `gguf.Keys` and
  a value type. llama.cpp fails to load a llama without the context length or the
  epsilon, and silently uses 10000 for a missing `rope.freq_base`: the matcher always
  sets it for rotary models.
"""
from __future__ import annotations

import gguf

from ..arch.roles import ROLES, split_key, tensor_key
from ..dtypes import BY_NAME, QUANTIZED, STORED

# role -> gguf-py's MODEL_TENSOR names, the first one the architecture has: llama.cpp calls
# the norm before Gemma's MLP FFN_PRE_NORM (stored as `ffn_norm`, as every other's)
ROLE_TENSORS = {
    "token_embedding": ("TOKEN_EMBD",), "position_embedding": ("POS_EMBD",),
    "output_norm": ("OUTPUT_NORM",), "output": ("OUTPUT",),
    "attn_norm": ("ATTN_NORM",), "attn_q": ("ATTN_Q",), "attn_k": ("ATTN_K",), "attn_v": ("ATTN_V",),
    "attn_qkv": ("ATTN_QKV",), "attn_out": ("ATTN_OUT",), "attn_q_norm": ("ATTN_Q_NORM",),
    "attn_k_norm": ("ATTN_K_NORM",), "attn_post_norm": ("ATTN_POST_NORM",),
    "ffn_norm": ("FFN_NORM", "FFN_PRE_NORM"), "ffn_post_norm": ("FFN_POST_NORM",),
    "ffn_gate": ("FFN_GATE",), "ffn_up": ("FFN_UP",), "ffn_down": ("FFN_DOWN",),
    "ffn_gate_inp": ("FFN_GATE_INP",), "ffn_gate_exps": ("FFN_GATE_EXP",), "ffn_up_exps": ("FFN_UP_EXP",),
    "ffn_down_exps": ("FFN_DOWN_EXP",),
}
assert set(ROLE_TENSORS) == set(ROLES)  # every role has its GGUF name
# tensors no param is read into: numbers the matcher computed (TensorPlan.values)
COMPUTED_TENSORS = {"rope_freqs": ("ROPE_FREQS",)}

# a GGUF tensor's name without its suffix ("blk.{bid}.attn_output") -> the role
_ROLE_OF = {gguf.TENSOR_NAMES[gguf.MODEL_TENSOR[t]]: role for role, ts in ROLE_TENSORS.items() for t in ts}

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
    # gptneox: its blocks side by side (x + attn(ln(x)) + mlp(ln2(x))) or in turn
    "parallel_residual": ("LLM", "USE_PARALLEL_RESIDUAL", "add_bool"),
    "freq_base": ("Rope", "FREQ_BASE", "add_float32"),
    # v0.3's rope scaling (linear, yarn): llama.cpp's freq_scale = 1/factor
    "rope_scaling_type": ("Rope", "SCALING_TYPE", "add_string"),
    "rope_scaling_factor": ("Rope", "SCALING_FACTOR", "add_float32"),
    # yarn's (arch/rope_gguf.py): the original context, and attention_factor / (1 + 0.1 ln factor)
    "rope_scaling_original_context": ("Rope", "SCALING_ORIG_CTX_LEN", "add_uint32"),
    "rope_scaling_attn_factor": ("Rope", "SCALING_ATTN_FACTOR", "add_float32"),
    # gemma3's layers of two kinds: with a sliding window (which ones: one bool per layer) and without
    "freq_base_swa": ("Rope", "FREQ_BASE_SWA", "add_float32"),
    "sliding_window": ("Attention", "SLIDING_WINDOW", "add_uint32"),
    "sliding_window_pattern": ("Attention", "SLIDING_WINDOW_PATTERN", "add_array"),
    # gemma2's caps c * tanh(x / c) on the attention's scores and on the logits
    "attn_softcap": ("LLM", "ATTN_LOGIT_SOFTCAPPING", "add_float32"),
    "final_softcap": ("LLM", "FINAL_LOGIT_SOFTCAPPING", "add_float32"),
    # v0.3's mixtures of experts: how many, how many per token, each one's width (qwen3moe)
    "expert_count": ("LLM", "EXPERT_COUNT", "add_uint32"),
    "expert_used_count": ("LLM", "EXPERT_USED_COUNT", "add_uint32"),
    "expert_feed_forward_length": ("LLM", "EXPERT_FEED_FORWARD_LENGTH", "add_uint32"),
}

FILE_TYPE = {**{n: getattr(gguf.LlamaFileType, BY_NAME[n].gguf_file_type) for n in STORED},
             **{n: getattr(gguf.LlamaFileType, t) for n, t in QUANTIZED.items()}}


UINT32_MAX = 2 ** 32 - 1  # the largest value of a uint32 field (HPARAM_KEYS' add_uint32)


def fits_uint32(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= UINT32_MAX


def key(short: str, arch: str) -> str:
    cls, attr, _ = HPARAM_KEYS[short]
    return getattr(getattr(gguf.Keys, cls), attr).format(arch=arch)


def arch_name(arch: str) -> str:
    """The architecture string as gguf.MODEL_ARCH_NAMES spells it (checks it exists)."""
    return gguf.MODEL_ARCH_NAMES[getattr(gguf.MODEL_ARCH, arch.upper())]


def add_hparams(w: "gguf.GGUFWriter", plan, name: str, dtype: str, file_type=None) -> None:
    """The plan's metadata; `general.file_type` the dtype's, or `file_type` (a kept file's own)."""
    arch = arch_name(plan.arch)
    w.add_name(name)
    w.add_file_type(int(file_type) if isinstance(file_type, int) else int(FILE_TYPE.get(dtype, FILE_TYPE["f32"])))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for short, value in plan.hparams.items():
        _, _, method = HPARAM_KEYS[short]
        getattr(w, method)(key(short, arch), value)


def model_tensor(arch: str, role: str) -> "gguf.MODEL_TENSOR":
    """gguf-py's MODEL_TENSOR for a role of the architecture (a ValueError when it has none:
    a bug in the family's table)."""
    march = getattr(gguf.MODEL_ARCH, arch.upper())
    for name in ROLE_TENSORS.get(role, COMPUTED_TENSORS.get(role, ())):
        mt = gguf.MODEL_TENSOR[name]
        if mt in gguf.MODEL_TENSORS[march]:
            return mt
    raise ValueError(f"{arch} has no tensor {role}")


def tensor_name(arch: str, t) -> str:
    """`blk.0.attn_q.weight` for a TensorPlan, checked against the architecture's list."""
    base = gguf.TENSOR_NAMES[model_tensor(arch, t.name)]
    if t.block is not None:
        base = base.format(bid=t.block)
    return f"{base}.{t.suffix}"


def role_key(name: str) -> str:
    """A GGUF tensor name by its role (`blk.0.attn_output.weight` -> `blk.0.attn_out.weight`,
    `token_embd.weight` -> `token_embedding.weight`); a name no role has, unchanged."""
    base, block, suffix = split_key(name)
    role = _ROLE_OF.get(f"blk.{{bid}}.{base}" if block is not None else base)
    return name if role is None else tensor_key(role, block, suffix)


def hf_role_map(arch: str, blocks: int):
    """`lookup(key)`: (the tensor by its role, `role_key`; the role or None) of a Hugging
    Face checkpoint key for the architecture, through gguf-py's own table
    (`gguf.TensorNameMap`, the one llama.cpp's converter uses); None for a key the table
    doesn't name."""
    tmap = gguf.TensorNameMap(getattr(gguf.MODEL_ARCH, arch.upper()), blocks)

    def lookup(key: str):
        found = tmap.get_type_and_name(key, try_suffixes=(".weight", ".bias"))
        if found is None:
            return None
        mt, name = found
        return role_key(name), _ROLE_OF.get(gguf.TENSOR_NAMES[mt])
    return lookup
