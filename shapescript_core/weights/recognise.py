"""Which kind of weights `--weights PATH` names, by content, never by trial: weights keyed
by the source's param paths (today's formats), or a checkpoint of another layout (the
GGUF magic; safetensors whose names are none of the params', that is Hugging Face names;
anything read through a `--weights-map` file)."""
from __future__ import annotations

from .gguf_checkpoint import GGUFCheckpoint, is_gguf
from .hf_checkpoint import HFCheckpoint
from .source import WeightSource


def open_weights(path: str, specs, weights_map: str | None = None):
    """(WeightSource, None) for weights keyed by param paths, or (None, checkpoint reader)
    for weights of another layout."""
    if is_gguf(path):
        return None, GGUFCheckpoint(path)
    if weights_map is not None:
        return None, HFCheckpoint(path)
    source = WeightSource(path)  # our own exports too: a mapping.json renames their keys
    keys = source.keys()
    wanted = {s.path for s in specs}
    if keys and not any(k in wanted for k in keys):
        return None, HFCheckpoint(path)
    return source, None
