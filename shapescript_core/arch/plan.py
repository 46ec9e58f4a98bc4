"""What the architecture matcher hands the GGUF writer: no numpy here, only numbers.

A `GGUFPlan` is an architecture (a family of archs.py: `llama`, `qwen2`, `qwen3`, `gpt2`,
`gemma2`, `gemma3`), its hyperparameters, and one `TensorPlan` per tensor, named by its
role (roles.py): which param it is read from and the changes applied on the way: layout
(`Transpose`, `Gather` of rows or columns, `RopePermute`) and values (`Offset`, `Scale`).
`layout.apply` carries them out on arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .roles import tensor_key


@dataclass(frozen=True)
class Gather:
    """Re-order (and select from) the rows (axis 0) or columns (axis 1) of a tensor.

    The axis is the flat composition of `shape` (outer factor first), as the source's
    pattern wrote it; `take` = (factor position, index) keeps one slice of a split factor
    (one of q, k, v in a fused projection); `perm` re-orders the remaining factors into
    the target's order (head first, then head width)."""
    axis: int
    shape: tuple
    take: tuple | None = None
    perm: tuple | None = None


@dataclass(frozen=True)
class RopePermute:
    """Rows of Q or K (weight or bias) from one rotary layout into the other.

    `to="interleaved"`: from rotate-half pairs (i, i + Dh/2) to adjacent pairs (2i, 2i+1),
    llama.cpp's `llama` layout; `to="half"`: the reverse (llama.cpp's `qwen2` rotates half).
    `dims`: only the first `dims` rows of each head rotate (v0.3's rotary_dims); None: all."""
    heads: int
    to: str
    dims: int | None = None


@dataclass(frozen=True)
class Offset:
    """A constant added to every value: a norm weight the source uses as `c + w` (Gemma's
    `1 + w`). llama.cpp multiplies by the stored weight, so the file stores `c + w`, as
    llama.cpp's own converter does for Gemma."""
    value: float


@dataclass(frozen=True)
class Scale:
    """Every value times a factor: an attention scale llama.cpp doesn't compute itself
    (Gemma's `query_pre_attn_scalar`), folded into the query norm's weights. rms_norm and
    rope are linear in that weight, so the scores come out scaled as the source says."""
    factor: float


@dataclass(frozen=True)
class Transpose:
    """A [in, out] weight read by `x @ W` into PyTorch's and llama.cpp's [out, in]."""


@dataclass(frozen=True)
class TensorPlan:
    name: str            # the tensor's role (roles.py), e.g. "attn_q"; gguf_format/names.py
                         # spells it as GGUF's (`blk.0.attn_q.weight`)
    block: int | None    # the layer index for per-block tensors
    suffix: str          # "weight" or "bias"
    source: str          # the param path the values come from ("layers.0.attn.wq")
    shape: tuple         # the source param's shape, PyTorch order ([out, in]); with no
                         # source (zeros written for a bias the source lacks), the tensor's
    steps: tuple = ()    # Transpose / Gather / RopePermute / Offset / Scale, in order
    kind: str = "matrix"  # "matrix" (may be f16/bf16/q8_0) or "vector" (norms, biases: stay f32)
    parts: tuple = ()    # ((param path or None, its shape, steps), ...) stacked along rows into
                         # one tensor of `shape` (gpt2's attn_qkv from separate q, k, v)
    values: tuple = ()   # numbers the matcher computed, written as they are (no source):
                         # llama3's rope divisors (`rope_freqs`, rope_gguf.py)

    @property
    def key(self) -> str:
        """The tensor by its role: `blk.0.attn_q.weight` (roles.tensor_key)."""
        return tensor_key(self.name, self.block, self.suffix)


@dataclass
class GGUFPlan:
    arch: str                        # "llama", "qwen2", "qwen3", "gpt2", "gemma3"
    hparams: dict                    # see gguf_format/names.py (HPARAM_KEYS) for the names
    tensors: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # said in the export's summary
    # the ropes' (scaling, ((keyword, value), …), rotary_dims): v0.3's, for the importer
    rope: tuple = ("none", (), None)
    # a mixture's routing (check/mixture_routing.py's key), for the importer; None without one
    routing: str | None = None


@dataclass(frozen=True)
class Departure:
    """Why no architecture runs the model: the first place it departs from the closest one."""
    arch: str            # the closest architecture
    reason: str          # "the MLP uses gelu, where llama has silu(gate) * up"
    where: object = None  # the graph node's source location, when known
