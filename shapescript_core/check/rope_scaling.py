"""Rope scaling (LANGUAGE.md §6.1, v0.3): the one table of `scaling=` values and the
keywords each takes, with transformers' names for them (`rope_type`, the fields of
`rope_parameters`), read by the checker, the code generator, the exporters' configs,
hover and the importer.

The meaning of each is transformers' `rope_type` of the same name
(`transformers.modeling_rope_utils`); the computation lives twice on purpose: in the
generated code (compile/prelude.py, `inv_frequencies`) and in the reference evaluator
(evaluate/semantics.py), which the tests compare with transformers' own functions.
"""
from __future__ import annotations

# scaling -> the keywords it needs, each required (no defaults: LANGUAGE.md §6.1)
SCALINGS = {
    "none": (),
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_positions"),
    "yarn": ("factor", "original_positions", "beta_fast", "beta_slow", "attention_factor"),
}
KEYWORDS = tuple(dict.fromkeys(k for ks in SCALINGS.values() for k in ks))
INTEGER_KEYWORDS = ("original_positions",)  # a number of positions

# transformers' spelling: rope_type "default" is our "none"; the fields of rope_parameters
HF_TYPE = {"none": "default"}
HF_KEY = {"original_positions": "original_max_position_embeddings"}
OURS_OF_HF_KEY = {v: k for k, v in HF_KEY.items()}


def hf_rope_parameters(theta: float, scaling: str, values: dict, dims=None, width=None) -> dict:
    """config.json's `rope_parameters` for one rope: its type, theta and fields, and
    `partial_rotary_factor` where it rotates `dims` of the head's `width` features."""
    out = {"rope_type": HF_TYPE.get(scaling, scaling), "rope_theta": float(theta)}
    for k in SCALINGS[scaling]:
        v = values[k]
        out[HF_KEY.get(k, k)] = int(v) if k in INTEGER_KEYWORDS else float(v)
    if dims is not None and width and dims != width:
        out["partial_rotary_factor"] = dims / width
    return out


def describe(scaling: str, values: dict) -> str:
    """`llama3 (factor 32, low_freq_factor 1, …)`, as hover shows a rope's scaling."""
    if scaling == "none" or scaling not in SCALINGS:
        return scaling
    shown = ", ".join(f"{k} {number_text(values[k])}" if k in values else f"{k} ?" for k in SCALINGS[scaling])
    return f"{scaling} ({shown})"


def number_text(v) -> str:
    """A value as a message shows it: 32 for 32.0."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
