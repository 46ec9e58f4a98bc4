"""Random weights from the fields' initializers, deterministic per (seed, path): a
param's values depend on nothing else (not the order, not the other params)."""
from __future__ import annotations

import hashlib
import math

import numpy as np

from ..dtypes import FLOATS
from ..export_errors import ExportError, ParamSpec
from .convert import NP, bf16_bits, bf16_to_f32
from .weight_messages import bad_init


def rng_for(seed: int, path: str) -> np.random.Generator:
    words = np.frombuffer(hashlib.sha256(path.encode("utf-8")).digest()[:16], dtype=np.uint32)
    return np.random.default_rng(np.random.SeedSequence([int(seed), *[int(w) for w in words]]))


def check_init(spec: ParamSpec):
    if spec.init[0] == "unknown" or (spec.init[0] == "normal" and spec.dtype not in FLOATS):
        raise ExportError(bad_init(spec.path, spec.init[1] if spec.init[0] == "unknown" else "normal"))
    if spec.init[0] == "normal" and not math.isfinite(float(spec.init[1])):
        raise ExportError(bad_init(spec.path, f"normal({spec.init[1]})") + " (a finite std)")


def random_tensor(spec: ParamSpec, seed: int) -> np.ndarray:
    """The param's random values in its dtype (bf16 as float32 holding bf16 values)."""
    check_init(spec)
    kind = spec.init[0]
    dt = np.float32 if spec.dtype == "bf16" else NP[spec.dtype]
    if kind == "ones":
        return np.ones(spec.shape, dtype=dt)
    if kind == "zeros":
        return np.zeros(spec.shape, dtype=dt)
    gen = rng_for(seed, spec.path)
    x = gen.standard_normal(spec.shape, dtype=np.float64 if dt == np.float64 else np.float32)
    x *= spec.init[1]
    if spec.dtype == "f16":
        return x.astype(np.float16)
    if spec.dtype == "bf16":
        return bf16_to_f32(bf16_bits(x))
    return x


def random_chunks(spec: ParamSpec, seed: int, elements: int):
    """The same values as `random_tensor(spec, seed)`, flat, in pieces of at most
    `elements`: the generator draws in sequence, so the pieces join to the whole."""
    check_init(spec)
    kind = spec.init[0]
    dt = np.float32 if spec.dtype == "bf16" else NP[spec.dtype]
    total = spec.numel
    gen = rng_for(seed, spec.path) if kind == "normal" else None
    done = 0
    while done < total:
        n = min(elements, total - done)
        done += n
        if kind == "ones":
            yield np.ones(n, dtype=dt)
        elif kind == "zeros":
            yield np.zeros(n, dtype=dt)
        else:
            x = gen.standard_normal(n, dtype=np.float64 if dt == np.float64 else np.float32)
            x *= spec.init[1]
            if spec.dtype == "f16":
                x = x.astype(np.float16)
            elif spec.dtype == "bf16":
                x = bf16_to_f32(bf16_bits(x))
            yield x
