"""A rope's v0.3 scaling as llama.cpp reads it from a GGUF file (numbers only, no numpy).

- `linear`: `rope.scaling.type` linear and its factor (llama.cpp divides the positions).
- `llama3`: no key; the per-frequency divisors in the `rope_freqs` tensor, computed as
  llama.cpp's converter does (`LlamaModel.generate_extra_tensors`: 1 above the high-
  frequency wavelength, the factor below the low one, a smooth blend between).
- `yarn`: `rope.scaling.type` yarn, its factor and `original_context_length`. llama.cpp
  multiplies cos and sin by get_mscale(factor) = 1 + 0.1 ln(factor) itself, times the
  file's `rope.scaling.attn_factor`: a source's `attention_factor` A is written as
  A / get_mscale(factor), nothing where they are equal (as the converter writes a
  Qwen2.5 config). llama.cpp's llama, qwen2 and qwen3 read no beta from the file (their
  context's 32 and 1 are used): other betas are a departure.

Measured with llama-cpp-python 0.3.36 against transformers: docs/serving-engines.md.
"""
from __future__ import annotations

import math

LLAMA_CPP_BETAS = (32.0, 1.0)  # the context's yarn_beta_fast and yarn_beta_slow


def llama3_factors(theta: float, dims: int, values: dict) -> tuple:
    """The `rope_freqs` tensor's values: one divisor per rotated pair (dims / 2)."""
    factor, low, high = (float(values[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
    original = float(values["original_positions"])
    low_wavelength, high_wavelength = original / low, original / high
    out = []
    for i in range(0, dims, 2):
        wavelength = 2 * math.pi * theta ** (i / dims)
        if wavelength < high_wavelength:
            out.append(1.0)
        elif wavelength > low_wavelength:
            out.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return tuple(out)


def yarn_mscale(factor: float) -> float:
    """What llama.cpp multiplies a yarn rope's cos and sin by before the file's attn_factor
    (transformers' default `attention_factor`)."""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0


def yarn_hparams(values: dict) -> dict:
    """The plan's hparams (gguf_format/names.py short names) for a yarn rope whose betas
    are llama.cpp's."""
    factor = float(values["factor"])
    out = {"rope_scaling_type": "yarn", "rope_scaling_factor": factor,
           "rope_scaling_original_context": int(values["original_positions"])}
    attention = float(values["attention_factor"]) / yarn_mscale(factor)
    if not math.isclose(attention, 1.0, rel_tol=1e-7):
        out["rope_scaling_attn_factor"] = attention
    return out
