"""`ImportedSource`: the source's params rebuilt from a checkpoint of another layout (one
`Recipe` per param), read like a `WeightSource` keyed by param paths, so every writer
takes it unchanged."""
from __future__ import annotations

import numpy as np

from ..export_errors import ExportError
from .convert import NP, bf16_bits, bf16_to_f32, to_stored
from ..arch.plan import Transpose
from .recipe import row_step, run_steps
from .safetensors_format import ST_DTYPES, TO_ST, TensorInfo


class _Where:
    def __init__(self, file: str):
        self.file = file


def refuse_unreadable(ckpt, recipes: dict) -> None:
    """ExportError naming the first tensor a recipe reads that the checkpoint can't give
    (an unsupported quantization type, a truncated file), before anything is written."""
    for r in recipes.values():
        for part in r.parts:
            why = ckpt.problem(part.tensor)
            if why:
                raise ExportError(why)


class ImportedSource:
    """Params rebuilt from a checkpoint, read like a `WeightSource`."""

    def __init__(self, ckpt, recipes: dict, specs: list):
        self.ckpt = ckpt
        self.recipes = recipes
        self.specs = {s.path: s for s in specs}
        self.where = {p: _Where(ckpt.path) for p in recipes}

    def describe(self) -> str:
        return self.ckpt.label()

    def settings(self) -> dict:
        """What comes along with the weights: bos/eos/pad ids, the context length."""
        return self.ckpt.settings()

    def tokenizer_fields(self) -> list:
        """A GGUF input's embedded tokenizer (tokenizer.* metadata); [] for other inputs."""
        return self.ckpt.tokenizer_fields() if hasattr(self.ckpt, "tokenizer_fields") else []

    def keys(self) -> list:
        return list(self.recipes)

    def info(self, path: str) -> TensorInfo:
        s = self.specs[path]
        item = ST_DTYPES[TO_ST[s.dtype]][1]
        return TensorInfo(path, s.dtype, tuple(s.shape), 0, s.numel * item)

    def truncated(self, path: str):
        return None

    def _direct(self, path: str):
        r = self.recipes[path]
        t = r.direct
        if t is not None and self.ckpt.can_copy(t) and self.ckpt.dtype(t) == self.specs[path].dtype:
            return t
        return None

    def _rows(self, path: str):
        """(checkpoint tensor, its rows in the param's order) when the param is one
        checkpoint tensor with its rows re-ordered or selected and its bytes otherwise
        unchanged (Q/K rows of another rotary layout, a slice of a stacked tensor); None
        otherwise."""
        found = self.rows_of(path)
        if found is None or not self.ckpt.can_copy(found[0]) or self.ckpt.dtype(found[0]) != self.specs[path].dtype:
            return None
        return found

    def rows_of(self, path: str):
        """(checkpoint tensor, its rows in the param's order) when the param is one
        checkpoint tensor with its rows at most re-ordered, whatever its stored type
        (`--dtype keep` copies a quantized tensor's rows); None otherwise."""
        r = self.recipes[path]
        if len(r.parts) != 1 or r.post or r.buffer is not None:
            return None
        p = r.parts[0]
        if p.scatter is not None or not all(row_step(s) for s in p.steps):
            return None
        if any(isinstance(s, Transpose) for s in self.ckpt.to_gguf(p.tensor)):
            return None
        return p.tensor, run_steps(np.arange(self.ckpt.shape(p.tensor)[0]), p.steps)

    def read(self, path: str):
        """The param in its declared dtype (bf16 as float32 holding bf16 values)."""
        arr = self.recipes[path].build(self.ckpt.read)
        dt = self.specs[path].dtype
        if dt == "bf16":  # rounds f32 values; bf16 values stay as they are
            return bf16_to_f32(bf16_bits(arr))
        want = NP.get(dt, np.float32)
        return arr if arr.dtype == want else arr.astype(want)

    def copy_into(self, path: str, out, check_cancelled=None) -> int:
        """Append the param's bytes (its declared dtype) to the open binary file `out`."""
        t = self._direct(path)
        if t is not None:
            return self.ckpt.copy_into(t, out, check_cancelled)
        rows = self._rows(path)
        if rows is not None:
            return self.ckpt.copy_rows_into(rows[0], out, rows[1], check_cancelled)
        return _write(out, to_stored(self.read(path), self.specs[path].dtype))

    def copy_rows_into(self, path: str, out, order, check_cancelled=None) -> int:
        """Append the param's rows in `order` (row indices) to `out`, as `copy_into` does."""
        t = self._direct(path)
        if t is not None:
            return self.ckpt.copy_rows_into(t, out, order, check_cancelled)
        rows = self._rows(path)
        if rows is not None:
            return self.ckpt.copy_rows_into(rows[0], out, rows[1][np.asarray(order, dtype=np.int64)], check_cancelled)
        arr = self.read(path)
        return _write(out, to_stored(arr[np.asarray(order, dtype=np.int64)], self.specs[path].dtype))

    def stream_chunks(self, path: str, elements: int):
        flat = self.read(path).reshape(-1)
        for i in range(0, flat.size, elements):
            yield flat[i:i + elements]


def _write(out, arr) -> int:
    view = memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
    n = len(view)
    while view:
        view = view[out.write(view):]
    return n


def dequantized_note(ckpt, names) -> list:
    """What an import of quantized tensors says: they are dequantized to float32."""
    q = ckpt.quantized(names)
    if not q:
        return []
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(q.items()))
    return [f"{sum(q.values())} of the checkpoint's tensors are quantized ({kinds}): dequantized to float32, "
            f"so the export holds the file's values, not the original model's"]
