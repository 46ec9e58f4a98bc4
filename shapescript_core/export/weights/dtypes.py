"""Which dtype a param is stored in (no numpy: a plain copy of the weights needs none)."""
from __future__ import annotations

FLOATS = ("f64", "f32", "f16", "bf16")


def stored_dtype(source: str, requested: str) -> str:
    """The dtype a param is stored in: floats take the requested dtype (q8_0 stores
    f32 in safetensors), other dtypes keep theirs."""
    if source in FLOATS and requested in ("f32", "f16", "bf16"):
        return requested
    if source in FLOATS:
        return "f32"
    return source
