"""A llama.cpp tensor name's role in words, for the import's diagnostics: `blk.0.attn_q.bias`
is "block 0's query projection bias". The role names come from gguf-py's own table."""
from __future__ import annotations

import gguf

ROLE_WORDS = {
    "TOKEN_EMBD": "the token embedding", "POS_EMBD": "the position embedding",
    "OUTPUT_NORM": "the final norm", "OUTPUT": "the output layer",
    "ATTN_NORM": "the attention norm", "ATTN_Q": "the query projection", "ATTN_K": "the key projection",
    "ATTN_V": "the value projection", "ATTN_QKV": "the fused q/k/v projection",
    "ATTN_OUT": "the attention output projection", "ATTN_Q_NORM": "the per-head query norm",
    "ATTN_K_NORM": "the per-head key norm", "FFN_NORM": "the MLP norm", "FFN_GATE": "the MLP gate",
    "ATTN_POST_NORM": "the norm after attention", "FFN_PRE_NORM": "the MLP norm",
    "FFN_POST_NORM": "the norm after the MLP",
    "FFN_UP": "the MLP up projection", "FFN_DOWN": "the MLP down projection",
}


def describe_role(name: str) -> str:
    """`blk.0.attn_q.bias` -> "block 0's query projection bias"."""
    parts = name.split(".")
    block = None
    if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit():
        block, base = int(parts[1]), "blk.{bid}." + ".".join(parts[2:-1])
    else:
        base = ".".join(parts[:-1])
    kind = next((mt.name for mt, n in gguf.TENSOR_NAMES.items() if n == base), None)
    words = ROLE_WORDS.get(kind or "", f"`{name}`")
    if block is not None:
        words = f"block {block}'s {words[4:] if words.startswith('the ') else words}"
    return words + (" bias" if parts[-1] == "bias" else "")


def role_kind(name: str) -> str:
    """A role without its block: `blk.3.attn_q.weight` -> `attn_q.weight`."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() else name
