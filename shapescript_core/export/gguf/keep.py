"""`--dtype keep`: a quantized `.gguf` in, its tensors out as they came.

Each output tensor that is one checkpoint tensor with its rows at most re-ordered (the
same role, or the rotary Q/K rows of another layout: whole rows, so whole blocks) is
copied block for block, never dequantized: its type and bytes are the input's. A tensor
the export must compute (a fused param split or joined, a transpose across blocks, a
bias of zeros the file lacks, llama3's `rope_freqs`) is dequantized, computed and
written at the nearest type this writer writes exactly: the input's when it is a float
(F32, F16, BF16), Q8_0 for a quantized one (gguf-py's Q8_0 is llama.cpp's bit for bit;
the K-quants it can't write); norms and biases stay F32. The summary says which.
A kept tensor in the input's row order is copied file to file by the kernel
(`copy_file_range`, as `cp` does), never through this process's memory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import gguf
import numpy as np
from gguf.quants import quant_shape_to_byte_shape

from ...arch import layout
from ...export_errors import KEEP_NEEDS_GGUF, ExportError

Q = gguf.GGMLQuantizationType
FLOAT_TYPES = (Q.F32, Q.F16, Q.BF16)


@dataclass
class Kept:
    qtype: object          # the input tensor's GGML type
    rows: np.ndarray       # its bytes, one row per row of the tensor
    order: np.ndarray      # the input rows in the output's order
    byte_shape: tuple      # the header's shape (uint8, raw_dtype=qtype)
    file: str | None = None  # the input file whose mapping `rows` is, and where in it they start
    offset: int = 0

    def write(self, out) -> None:
        """The rows, in the output's order, into `out` (a binary file, at the tensor's
        start). Rows in the input's order are copied file to file by the kernel
        (copy_file_range, as `cp` copies: no page faults on the mapping, no copy through
        this process); re-ordered rows, and what the kernel can't copy, through memory."""
        in_order = np.array_equal(self.order, np.arange(len(self.order)))
        done = copy_range(self.file, self.offset, self.rows.nbytes, out) if in_order and self.file else 0
        data = self.rows if in_order else self.rows[self.order]
        view = memoryview(np.ascontiguousarray(data)).cast("B")[done:]
        while view:
            view = view[out.write(view):]


def copy_range(path: str, offset: int, count: int, out) -> int:
    """`count` bytes of `path` from `offset` appended to `out` by copy_file_range; the
    bytes copied: fewer (0 at worst) where the kernel can't (no copy_file_range, a file
    system that refuses it), the caller writing the rest."""
    copy = getattr(os, "copy_file_range", None)
    if copy is None or count <= 0:
        return 0
    try:
        dst = out.fileno()
        out.flush()
        start = out.tell()
        src = os.open(path, os.O_RDONLY)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return 0
    done = 0
    try:
        while done < count:
            n = copy(src, dst, count - done, offset + done, start + done)
            if n <= 0:
                break
            done += n
    except OSError:  # EXDEV, ENOSYS, EINVAL, EOPNOTSUPP: the rest through memory
        pass
    finally:
        os.close(src)
    out.seek(start + done)
    return done


def _mapped_at(ckpt, rows: np.ndarray, tensor) -> tuple:
    """(the input file, the offset of `rows` in it) where `rows` are the bytes of the
    reader's mapping of the file at the tensor's own offset; (None, 0) otherwise."""
    mapping = getattr(getattr(ckpt, "reader", None), "data", None)
    if not isinstance(mapping, np.memmap) or not rows.flags.c_contiguous or rows.nbytes != tensor.n_bytes:
        return None, 0
    at = int(mapping.offset) + (rows.ctypes.data - mapping.ctypes.data)
    if at != tensor.data_offset or not 0 <= at - int(mapping.offset) <= mapping.nbytes - rows.nbytes:
        return None, 0
    return getattr(mapping, "filename", None) or ckpt.path, at


def checkpoint(ctx):
    """The imported .gguf (a GGUFCheckpoint), or ExportError: keep needs one."""
    source = getattr(ctx, "_source", None)
    ckpt = getattr(source, "ckpt", None)
    if ckpt is None or getattr(ckpt, "kind", None) != "gguf":
        raise ExportError(KEEP_NEEDS_GGUF)
    return ckpt


def kept(ctx, t, shape) -> Kept | None:
    """The tensor `t` of the plan copied from the input, when it is one input tensor
    with its rows at most re-ordered; None when it must be computed."""
    if t.source is None or t.parts or t.values:
        return None
    source = ctx._source
    found = source.rows_of(t.source)
    if found is None:
        return None
    name, param_rows = found
    plan_rows = layout.row_order(t.steps, t.shape[0]) if t.steps else np.arange(t.shape[0])
    if plan_rows is None:
        return None
    tensor = source.ckpt.tensors[source.ckpt.key_of(name)]
    order = np.asarray(param_rows)[plan_rows]
    data = np.asarray(tensor.data)
    if len(shape) == 1:  # a vector (a norm's weight): kept where its values keep their places
        if not np.array_equal(order, np.arange(len(order))) or data.size * data.itemsize != tensor.n_bytes:
            return None
        rows, order = data.view(np.uint8).reshape(1, -1), np.arange(1)
    else:
        rows = data.view(np.uint8).reshape(data.shape[0], -1)
        if rows.shape[0] != len(order) or shape[0] != len(order):
            return None
    file, offset = _mapped_at(source.ckpt, rows, tensor)
    return Kept(tensor.tensor_type, rows, order, quant_shape_to_byte_shape(tuple(shape), tensor.tensor_type),
                file, offset)


def computed_type(ctx, t) -> str:
    """The dtype (the writer's name) a computed tensor is written at: f32 for a vector;
    else the input's float type, or q8_0 where any of its input tensors is quantized."""
    if t.kind == "vector":
        return "f32"
    source = ctx._source
    types = set()
    for path in [t.source] + [p for p, _, _ in t.parts]:
        recipe = source.recipes.get(path) if path is not None else None
        for part in (recipe.parts if recipe is not None else []):
            types.add(source.ckpt.tensors[source.ckpt.key_of(part.tensor)].tensor_type)
    if any(q not in FLOAT_TYPES for q in types):
        return "q8_0"
    return "f16" if types == {Q.F16} else "bf16" if types == {Q.BF16} else "f32"


def summary(kept_types: dict, computed: list) -> str:
    """`kept 20 tensors as they came (15 Q4_0, 5 F32); computed 1: blk.0.attn_qkv.weight (Q8_0)`."""
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(kept_types.items()))
    out = f"kept {sum(kept_types.values())} tensors as they came ({kinds})"
    if computed:
        shown = ", ".join(f"{name} ({q})" for name, q in computed[:3]) + (", ..." if len(computed) > 3 else "")
        out += f"; computed {len(computed)}, written at the nearest type this writer writes exactly: {shown}"
    return out
