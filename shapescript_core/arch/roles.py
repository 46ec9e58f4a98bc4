"""The tensors' roles: a vocabulary of our own, what each tensor of a family does.

A `TensorPlan.name` is one of `ROLES` (`attn_q`: a block's query projection); a tensor
is named by its role, its block and its suffix (`tensor_key`: `blk.0.attn_q.weight`,
`token_embedding.weight`), which is how the importer matches a checkpoint's tensors to
the source's params. Each target spells the roles its own way: the GGUF format's names
(gguf-py's `MODEL_TENSOR`, `blk.0.attn_output.weight`) live in `gguf_format/names.py`
alone, never here. `ROLE_WORDS` says a role in words for the import's diagnostics:
`blk.0.attn_q.bias` is "block 0's query projection bias".

The norms are named by the sublayer they belong to: `attn_norm` and `ffn_norm` are read
by attention and the MLP (Gemma's "pre" norms too), `attn_post_norm` and
`ffn_post_norm` normalize their outputs (Gemma's norms after each sublayer).
"""
from __future__ import annotations

ROLE_WORDS = {
    "token_embedding": "the token embedding", "position_embedding": "the position embedding",
    "output_norm": "the final norm", "output": "the output layer",
    "attn_norm": "the attention norm", "attn_q": "the query projection", "attn_k": "the key projection",
    "attn_v": "the value projection", "attn_qkv": "the fused q/k/v projection",
    "attn_out": "the attention output projection", "attn_q_norm": "the per-head query norm",
    "attn_k_norm": "the per-head key norm", "attn_post_norm": "the norm after attention",
    "ffn_norm": "the MLP norm", "ffn_post_norm": "the norm after the MLP",
    "ffn_gate": "the MLP gate", "ffn_up": "the MLP up projection", "ffn_down": "the MLP down projection",
    # v0.3: a mixture of experts, each expert's weights stacked along the first axis
    "ffn_gate_inp": "the experts' router", "ffn_gate_exps": "the experts' gates",
    "ffn_up_exps": "the experts' up projections", "ffn_down_exps": "the experts' down projections",
}

ROLES = tuple(ROLE_WORDS)

# the roles of the model as a whole (no block)
GLOBAL = frozenset({"token_embedding", "position_embedding", "output_norm", "output"})


def tensor_key(role: str, block: int | None, suffix: str) -> str:
    """One tensor by its role: `blk.0.attn_q.weight`, `token_embedding.weight`."""
    return f"blk.{block}.{role}.{suffix}" if block is not None else f"{role}.{suffix}"


def split_key(name: str) -> tuple:
    """(role or the name's base, block or None, suffix) of a `tensor_key`; a name that is
    no role's (a checkpoint tensor no role reads) splits the same way."""
    parts = name.split(".")
    if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit():
        return ".".join(parts[2:-1]), int(parts[1]), parts[-1]
    return ".".join(parts[:-1]), None, parts[-1]


def describe_role(name: str) -> str:
    """`blk.0.attn_q.bias` -> "block 0's query projection bias"; a name no role has is
    quoted (`blk.0.ffn_gate_inp.weight` -> "block 0's `blk.0.ffn_gate_inp.weight`")."""
    role, block, suffix = split_key(name)
    words = ROLE_WORDS.get(role, f"`{name}`") if role else f"`{name}`"
    if block is not None:
        words = f"block {block}'s {words[4:] if words.startswith('the ') else words}"
    return words + (" bias" if suffix == "bias" else "")


def role_kind(name: str) -> str:
    """A role without its block: `blk.3.attn_q.weight` -> `attn_q.weight`."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() else name
