"""Layout changes from the source's tensors to llama.cpp's (numpy; only the export loads it).

- `Transpose`: a weight used as `x @ W` ([in, out]) into [out, in];
- `Gather`: the rows (or columns) of a projection in the order llama.cpp reads them, and one
  slice of a fused projection (q, k or v out of one `w_qkv`);
- `RopePermute`: Q/K rows between the rotate-half layout (Hugging Face Llama, our `rope`
  default) and the interleaved one (llama.cpp's `llama`). See
  ../shared/reference/export-consumers.md: unpermuted rows give wrong logits silently;
- `Offset`, `Scale`: values changed in float32, as llama.cpp's converter changes them
  (Gemma's norm weights stored as 1 + w; an attention scale folded into the query norm).
"""
from __future__ import annotations

import numpy as np

from .plan import Gather, Offset, RopePermute, Scale, Transpose


def apply(arr: np.ndarray, steps) -> np.ndarray:
    for s in steps:
        if isinstance(s, Transpose):
            arr = arr.T
        elif isinstance(s, Gather):
            arr = _gather(arr, s)
        elif isinstance(s, RopePermute):
            arr = rope_permute(arr, s.heads, s.to, s.dims)
        elif isinstance(s, Offset):
            arr = np.asarray(arr, dtype=np.float32) + np.float32(s.value)
        elif isinstance(s, Scale):
            arr = np.asarray(arr, dtype=np.float32) * np.float32(s.factor)
        else:  # a plan built by this package only holds these
            raise TypeError(f"unknown layout step {s!r}")
    return np.ascontiguousarray(arr)


def row_order(steps, rows: int):
    """The source rows, in the order the steps put them, when the steps only re-order or
    select rows (`RopePermute`, a `Gather` along axis 0): the tensor is then a row copy of
    its source. None when a step does more (a transpose, columns, values)."""
    if not all(isinstance(s, RopePermute) or (isinstance(s, Gather) and s.axis == 0) for s in steps):
        return None
    return apply(np.arange(rows, dtype=np.int64), steps)


def gather_index(s: Gather) -> np.ndarray:
    idx = np.arange(int(np.prod(s.shape)), dtype=np.int64).reshape(s.shape)
    if s.take is not None:
        pos, i = s.take
        idx = np.take(idx, i, axis=pos)
    if s.perm is not None:
        idx = idx.transpose(s.perm)
    return idx.reshape(-1)


def _gather(arr: np.ndarray, s: Gather) -> np.ndarray:
    idx = gather_index(s)
    if s.take is None and np.array_equal(idx, np.arange(arr.shape[s.axis])):
        return arr
    return np.take(arr, idx, axis=s.axis)


def rope_permute(w: np.ndarray, heads: int, to: str, dims: int | None = None) -> np.ndarray:
    """Rows [heads*Dh, ...]: rotate-half -> interleaved (`to="interleaved"`) or back; with
    `dims`, only the first `dims` rows of each head (the others are not rotated)."""
    rest = w.shape[1:]
    width = w.shape[0] // heads
    if dims is not None and dims != width:
        v = w.reshape(heads, width, *rest)
        rotated = rope_permute(v[:, :dims].reshape(heads * dims, *rest), heads, to)
        return np.concatenate([rotated.reshape(heads, dims, *rest), v[:, dims:]], axis=1).reshape(w.shape)
    if to == "interleaved":
        v = w.reshape(heads, 2, width // 2, *rest).swapaxes(1, 2)
    else:
        v = w.reshape(heads, width // 2, 2, *rest).swapaxes(1, 2)
    return v.reshape(w.shape)
