"""Sizes checked before an export writes anything (docs/security.md, "Sizes"): no tensor
over the per-tensor cap (default 16 GiB, `[limits] max_tensor_size`), and all of them
together within the free space of the disk the output goes to. A `--dim V=2147483648`
is refused up front, naming the sizes, instead of streaming random weights until the
disk is full.

The estimate is the tensors' bytes in the stored dtype (the request's for floats;
q8_0 stores blocks of 32 values in 34 bytes), which every target writes once; the
generated code, config and tokenizer files are small beside them.
"""
from __future__ import annotations

import os
import shutil
from typing import Optional

from ..files import human_size
from ..dtypes import BY_NAME, FLOATS, QUANT_BLOCKS, stored_dtype

GiB = 1024 ** 3
DEFAULT_MAX_TENSOR = 16 * GiB


def tensor_bytes(spec, requested_dtype: str) -> int:
    """The bytes one param takes in the output (an exact integer, however large)."""
    if requested_dtype in QUANT_BLOCKS and spec.dtype in FLOATS:
        values, nbytes = QUANT_BLOCKS[requested_dtype]
        return -(-spec.numel // values) * nbytes
    row = BY_NAME.get(stored_dtype(spec.dtype, requested_dtype))
    return spec.numel * (row.itemsize if row is not None else 8)


def _free_space(output: str) -> Optional[int]:
    """Free bytes on the file system the output goes to (its nearest existing folder)."""
    d = os.path.dirname(os.path.abspath(output))
    while d and not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    try:
        return shutil.disk_usage(d).free
    except OSError:
        return None


def size_problem(specs, request, max_tensor: Optional[int] = None) -> Optional[str]:
    """Why these params can't be written (one message naming the sizes), or None."""
    cap = max_tensor or DEFAULT_MAX_TENSOR
    total, over, biggest, big_n = 0, 0, None, -1  # one pass, nothing kept per param
    memo: dict = {}  # (shape, dtype) -> bytes: a stack's copies repeat a few shapes
    for spec in specs:
        key = (spec.shape, spec.dtype)
        n = memo.get(key)
        if n is None:
            n = memo[key] = tensor_bytes(spec, request.dtype)
        total += n
        if n > cap:
            over += 1
            if n > big_n:
                biggest, big_n = spec, n
    if over:
        s, n = biggest, big_n
        shape = " ".join(str(x) if x < 10 ** 30 else "10^%d" % (len(str(x)) - 1 if x < 10 ** 4000 else 4000)
                         for x in s.shape)
        more = f" (and {over - 1} more)" if over > 1 else ""
        return (f"not exported: the param `{s.path}` [{shape}] would take {human_size(n)}{more}, over the "
                f"per-tensor limit of {human_size(cap)} (`max_tensor_size` in shapescript.toml's [limits]); "
                f"nothing was written")
    free = _free_space(request.output)
    if free is not None and total > free:
        return (f"not exported: the weights would take {human_size(total)}, and the disk of "
                f"`{os.path.dirname(os.path.abspath(request.output))}` has {human_size(free)} free; "
                f"nothing was written")
    return None
