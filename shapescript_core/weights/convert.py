"""dtype conversion of float tensors, exact as torch does it.

numpy has no bfloat16: a bf16 tensor is held as float32 (every bf16 value is one) and
stored as uint16, the float32's upper half rounded to nearest, ties to even, with NaN
as 0x7FC0 (c10's `round_to_nearest_even`). f16 is numpy's IEEE half (also round to
nearest even; overflow gives inf, as torch's `.to(torch.float16)`).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import TABLE

NP = {d.name: getattr(np, d.numpy) for d in TABLE if d.numpy}  # our name -> numpy's (no bf16)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 (or wider) values -> bfloat16 bit patterns, uint16.

    One temporary, updated in place (4x faster than the plain expression on 1 MiB
    chunks, which stay in the cache)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    b = u >> 16
    b &= 1
    b += 0x7FFF
    b += u
    b >>= 16
    out = b.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = 0x7FC0
    return out


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_stored(x: np.ndarray, stored: str) -> np.ndarray:
    """An array whose bytes are the tensor in `stored` (bf16 as uint16 bits)."""
    if stored == "bf16":
        return bf16_bits(x)
    want = NP[stored]
    if x.dtype == want:
        return np.ascontiguousarray(x)
    with np.errstate(over="ignore"):  # out of f16's range gives inf, as torch does
        return np.ascontiguousarray(x.astype(want))
