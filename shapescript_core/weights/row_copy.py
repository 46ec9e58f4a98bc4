"""A tensor's rows copied in another order, straight from its file: the layout changes that
only re-order (or select) rows (llama.cpp's Q/K rotary permutation, one of q, k, v out of a
fused projection) need no array and no arithmetic.

The rows of a block of the output are read by the kernel into their places in one buffer
(`preadv`: a run of consecutive rows of the file scatters into their output slots in one
call), and the block is written in one write. Two copies of each byte, as `read` + `write`
make, where reading into an array, re-ordering it and writing it made three, and the buffer
is one block (at most BLOCK bytes, reused), not the tensor.
"""
from __future__ import annotations

import os

BLOCK = 16 * 1024 * 1024  # bytes of output rows gathered, then written, at a time
IOV_MAX = 1024            # buffers one preadv takes (Linux's IOV_MAX)


class Truncated(Exception):
    """The file ends before a row the order names."""


def copy_rows(fd: int, start: int, row_bytes: int, order, out, check_cancelled=None) -> int:
    """Write rows `order[0], order[1], ...` of the tensor at byte `start` of the open file
    `fd` (rows of `row_bytes`) to the binary file `out`; the bytes written."""
    order = [int(i) for i in order]
    n = len(order)
    per_block = max(1, min(n, BLOCK // max(1, row_bytes)))
    buf = memoryview(bytearray(per_block * row_bytes))
    for first in range(0, n, per_block):
        if check_cancelled is not None:
            check_cancelled()
        last = min(n, first + per_block)
        slots = sorted(range(first, last), key=order.__getitem__)  # output rows by their file row
        i = 0
        while i < len(slots):
            j = i + 1  # [i, j): consecutive rows of the file
            while j < len(slots) and order[slots[j]] == order[slots[j - 1]] + 1:
                j += 1
            _read_into(fd, _slot_views(buf, slots[i:j], first, row_bytes), start + order[slots[i]] * row_bytes)
            i = j
        _write_all(out, buf[:(last - first) * row_bytes])
    return n * row_bytes


def _slot_views(buf: memoryview, slots: list, first: int, row_bytes: int) -> list:
    """The buffer's pieces for these output rows, adjacent ones as one piece (a stretch
    of rows that keeps its order is read in one)."""
    views = []
    a = 0
    for k in range(1, len(slots) + 1):
        if k == len(slots) or slots[k] != slots[k - 1] + 1:
            views.append(buf[(slots[a] - first) * row_bytes:(slots[k - 1] - first + 1) * row_bytes])
            a = k
    return views


def _read_into(fd: int, views: list, offset: int):
    """Fill `views` from `offset` on (preadv, IOV_MAX buffers a call; pread where the
    system has no preadv), or Truncated."""
    k = 0
    while k < len(views):
        batch = views[k:k + IOV_MAX]
        if hasattr(os, "preadv"):
            got = os.preadv(fd, batch, offset)
        else:
            data = os.pread(fd, sum(len(v) for v in batch), offset)
            got, at = len(data), 0
            for v in batch:
                take = min(len(v), got - at)
                v[:take] = data[at:at + take]
                at += take
        if got == 0:
            raise Truncated()
        offset += got
        while got and k < len(views):  # drop the filled buffers, cut a partly filled one
            if got >= len(views[k]):
                got -= len(views[k])
                k += 1
            else:
                views[k] = views[k][got:]
                got = 0


def _write_all(out, view: memoryview):
    while view:
        n = out.write(view)
        if n is None or n <= 0:
            raise OSError(28, "No space left on device")
        view = view[n:]
