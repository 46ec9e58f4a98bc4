"""The safetensors format, read and written by hand where the library can't help:
reading a header checks that every tensor lies inside the file (a truncated file names
the first tensor it cuts), and writing streams: the header (every key, shape and
offset) is computed from the specs and written first, then each tensor's bytes in order.

Layout: an 8-byte little-endian header length N, N bytes of JSON (padded with spaces so
that the data starts 8-byte aligned, as `safetensors.serialize` does), then the tensors'
bytes back to back; `data_offsets` are relative to the data's start.
"""
from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass

from ..dtypes import TABLE
from ..export_errors import ExportError
from ..files import ReadRefused, open_file
from .weight_messages import corrupt_file, unreadable

# safetensors dtype -> (our dtype name, item size), from the one table
ST_DTYPES = {d.safetensors: (d.name, d.itemsize) for d in TABLE}
TO_ST = {ours: st for st, (ours, _) in ST_DTYPES.items()}
MAX_HEADER = 100 * 1024 * 1024  # the library's own limit
# what we parse: a header entry takes about 100 bytes, so 16 MB is 160,000 tensors in one
# file (the largest checkpoints shard far below that); parsing is some 10 times the bytes
MAX_HEADER_ENTRIES_BYTES = 16 * 1024 * 1024


@dataclass
class TensorInfo:
    key: str
    dtype: str      # ours: f32 f16 bf16 ...
    shape: tuple
    start: int      # absolute byte offsets in the file
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


@dataclass
class HeaderInfo:
    file: str
    tensors: dict       # key -> TensorInfo, in file order
    metadata: dict
    size: int           # the file's size
    truncated: dict     # key -> why, for tensors that run past the end of the file


def read_header(file: str) -> HeaderInfo:
    """Parse and check a safetensors header; ExportError for a corrupt one. Tensors
    that run past the end of the file are listed in `truncated`, not raised, so the
    caller can name the ones the model needs."""
    name = os.path.basename(file)
    try:
        try:
            fh = open_file(file)  # a regular file, opened without blocking (never a FIFO or a device)
        except ReadRefused as e:
            raise ExportError(f"can't read the weights `{file}`: {e.refusal.reason}") from None
        size = os.fstat(fh.fileno()).st_size
        with fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ExportError(corrupt_file(name, f"it is {size} bytes long, shorter than a header"))
            (n,) = struct.unpack("<Q", head)
            # checked before anything is allocated for it; the value itself is not shown (it
            # is the file's first bytes, which may be anything's)
            if n > MAX_HEADER or n > size - 8:
                raise ExportError(corrupt_file(name, f"the header length its first 8 bytes give does not fit "
                                                     f"the file's {size} bytes (truncated, or not safetensors)"))
            if n > MAX_HEADER_ENTRIES_BYTES:
                raise ExportError(corrupt_file(name, f"its header is over {MAX_HEADER_ENTRIES_BYTES // 2**20} MB: "
                                                     "more tensors than a model has (split it into shards)"))
            raw = fh.read(n)
    except OSError as e:
        raise ExportError(corrupt_file(name, e.strerror or str(e)))
    try:
        header = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ExportError(corrupt_file(name, "its header is JSON nested too deeply")) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(corrupt_file(name, f"its header is not JSON ({str(e)[:100]})"))
    if not isinstance(header, dict):
        raise ExportError(corrupt_file(name, "its header is not a JSON object"))
    base = 8 + n
    data_size = size - base
    tensors: dict = {}
    truncated: dict = {}
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise ExportError(corrupt_file(name, "its `__metadata__` is not an object"))
    spans = []
    for key, entry in header.items():
        if not isinstance(entry, dict):
            raise ExportError(corrupt_file(name, f"the header's entry for `{key}` is not an object"))
        st = entry.get("dtype")
        shape = entry.get("shape")
        offs = entry.get("data_offsets")
        if st not in ST_DTYPES:
            raise ExportError(unreadable(key, name, f"its dtype `{st}` is not a safetensors dtype"))
        if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                  for s in shape):
            raise ExportError(unreadable(key, name, f"its shape `{shape}` is not a list of sizes"))
        if (not isinstance(offs, list) or len(offs) != 2 or not all(isinstance(o, int) and o >= 0 for o in offs)
                or offs[1] < offs[0]):
            raise ExportError(unreadable(key, name, f"its data offsets `{offs}` are not [begin, end]"))
        ours, item = ST_DTYPES[st]
        numel = 1
        for s in shape:
            numel *= s
        if offs[1] - offs[0] != numel * item:
            raise ExportError(unreadable(key, name, f"its offsets hold {offs[1] - offs[0]} bytes, but "
                                                    f"{st} {shape} takes {numel * item}"))
        if offs[1] > data_size:
            truncated[key] = (f"the file ends {data_size - min(offs[0], data_size)} bytes into the tensor's "
                              f"{offs[1] - offs[0]} (the file is truncated)")
        spans.append((offs[0], offs[1], key))
        tensors[key] = TensorInfo(key, ours, tuple(shape), base + offs[0], base + offs[1])
    spans.sort()
    for (a0, a1, ka), (b0, b1, kb) in zip(spans, spans[1:]):
        if b0 < a1:
            raise ExportError(corrupt_file(name, f"`{ka}` and `{kb}` overlap"))
    order = sorted(tensors.values(), key=lambda t: t.start)
    return HeaderInfo(file, {t.key: t for t in order}, metadata, size, truncated)


def build_header(entries, metadata=None) -> tuple:
    """(header bytes with their length prefix, [(key, start, end)] absolute) for
    entries [(key, safetensors dtype, shape)] laid out in order."""
    doc: dict = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    layout = []
    for key, st, shape in entries:
        numel = 1
        for s in shape:
            numel *= int(s)
        nbytes = numel * ST_DTYPES[st][1]
        doc[key] = {"dtype": st, "shape": [int(s) for s in shape], "data_offsets": [offset, offset + nbytes]}
        layout.append((key, offset, offset + nbytes))
        offset += nbytes
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - (8 + len(raw)) % 8) % 8)
    prefix = struct.pack("<Q", len(raw)) + raw
    return prefix, [(k, len(prefix) + a, len(prefix) + b) for k, a, b in layout]
