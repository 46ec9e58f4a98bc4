"""LiteRT's export options and their defaults (docs/serving-engines.md, "LiteRT").

- prefill length 128 (export_hf's own): the tokens one `prefill_128` call takes; a longer
  prompt is prefilled in several calls, a shorter one right-padded;
- cache length 1024: the KV cache's length, the longest context. export_hf's default, 4096,
  makes a float32 cache four times as large for contexts on-device models rarely reach.
  A model with learned positions (`Index[P]` positions) can't look past its table: its
  default is min(1024, P), and a longer `--cache-length` is E3317;
- float32 weights; `--quantize int8` asks for export_hf's dynamic int8 recipe;
- `--split-cache`: export_hf's split-cache mode (off by default): the model takes
  embeddings, the rotary table and the mask as inputs and returns the new keys and values
  (`model.tflite`), beside `embedder.tflite` and `auxiliary.tflite` (RoPE, mask, cache update).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEFAULT_PREFILL = 128
DEFAULT_CACHE = 1024
INT8_RECIPE = "dynamic_wi8_afp32"


@dataclass(frozen=True)
class LitertOptions:
    prefill_length: int
    cache_length: int
    recipe: str           # "none" (float32) or an ai_edge_quantizer recipe
    split_cache: bool = False

    @property
    def quantized(self) -> bool:
        return self.recipe != "none"


def resolve(request, max_positions: Optional[int]) -> LitertOptions:
    """The options for this export; `max_positions` is a learned position table's size
    (None for a model whose positions are not an index). Lengths the model can't hold are
    checked by the caller (E3317)."""
    cache = request.cache_length
    if cache is None:
        cache = DEFAULT_CACHE if max_positions is None else min(DEFAULT_CACHE, max_positions)
    prefill = request.prefill_length
    if prefill is None:
        prefill = min(DEFAULT_PREFILL, cache)
    return LitertOptions(prefill, cache, INT8_RECIPE if request.quantize == "int8" else "none",
                         bool(request.split_cache))
