"""A language model's rotary positions as one table, as transformers' own models compute them.

Hugging Face decoders compute the rotary tables once per forward, in a module of the base
model (`model.model.rotary_emb(hidden, position_ids)` -> `(cos, sin)`, each `[b n Dh]`),
and every attention rotates its queries and keys with them; `config.rope_parameters`
says how. Tools read that structure: LiteRT-Torch's split-cache export (`--split-cache`)
swaps the module for tables it computes outside the model, and exports the original alone
as its RoPE signature.

A generated model does the same when its rotary positions are one table: every `rope` the
exported function runs (its inlined trace) rotates by the positions parameter itself,
with one theta known at export, one style and one width, the attention's head width; and
the positions feed nothing but those ropes (the table is all of them the model sees).
`rotary_plan` says so (a `Rotary`) or says why not (a sentence, for E3318). The generated
code then computes the table in a `RotaryEmbedding` module and passes it down as
`position_embeddings` (codegen.py); otherwise each `rope` computes its own, as before.
Either way the numbers are the same: both go through the prelude's `rotary_table`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from ..check.rope_scaling import hf_rope_parameters
from .graph import UNFOLDED, rope_setting



@dataclass(frozen=True)
class Rotary:
    theta: float
    style: str   # "half" or "interleaved"
    width: int   # the attention's head width
    dims: int    # the features of each head it rotates (`rotary_dims`, else the width)
    scaling: str = "none"   # rope scaling (check/rope_scaling.py) and its keywords' values
    values: tuple = ()

    def rope_parameters(self) -> dict:
        """config.json's `rope_parameters` for this table, in transformers' spelling."""
        return hf_rope_parameters(self.theta, self.scaling, dict(self.values), self.dims, self.width)


def _line(n) -> str:
    return f" (line {n.where[1]})" if n is not None and n.where and n.where[1] else ""


def rotary_plan(trace, positions: Optional[str], head_dim: Optional[int]) -> Union[Rotary, str]:
    """The model's one rotary table, or why it has none (a sentence)."""
    if not positions:
        return "the model takes no positions"
    pos = trace.inputs.get(positions)
    ropes = [n for n in trace.nodes if n.op == "rope"]
    if not ropes:
        return f"the positions `{positions}` feed no rope (positions a rotary table can't hold)"
    first = None
    for r in ropes:
        args = r.attrs.get("args", {})
        if args.get("pos") is not pos:
            return f"a rope rotates by computed positions{_line(r)}, not by `{positions}` itself"
        theta, scaling, values, dims = rope_setting(r.attrs)
        if theta is UNFOLDED:
            return f"a rope's theta is computed{_line(r)}, not a number known at export"
        if dims is UNFOLDED or any(v is UNFOLDED for _, v in values):
            return f"a rope's scaling or rotary_dims is computed{_line(r)}, not a number known at export"
        x = args.get("x")
        width = x.shape[-1] if x is not None and x.shape else None
        this = Rotary(theta, r.attrs.get("style", "half"), width, dims if dims is not None else width, scaling, values)
        if first is None:
            first = this
        elif this != first:
            what = ("theta" if this.theta != first.theta else "style" if this.style != first.style else
                    "width" if this.width != first.width else "rotary_dims" if this.dims != first.dims else "scaling")
            return f"the ropes differ in {what}{_line(r)}: one table can't serve them all"
    if first.width is None or first.width != head_dim:
        return (f"the ropes rotate {first.width} of the attention's {head_dim} channels per head{_line(ropes[0])}, "
                f"where a rotary table covers the whole head")
    for n in trace.nodes:
        if n.op != "rope" and any(i is pos for i in n.inputs):
            return f"the positions `{positions}` feed `{n.op}`{_line(n)} besides the ropes"
    for r in ropes:
        if r.attrs["args"].get("x") is pos:
            return f"the positions `{positions}` are rotated{_line(r)}"
    return first
