"""What a writer is given: `ExportContext` (see writers.py for the contract)."""
from __future__ import annotations

import os
from contextlib import contextmanager

from ..export_errors import ExportCancelled, ExportError, ParamSpec
from ..dtypes import from_numpy, stored_dtype
from ..weights.safetensors_format import TO_ST, build_header

CHUNK_ELEMENTS = 256 * 1024  # 1 MiB of f32 per conversion step: the passes stay in the cache


class ExportContext:
    """The request, the exported function, the dims' values and the params, with the
    means to read a param, stream a safetensors file, report progress and notice a
    cancel. Built by `run_export` once every check has passed."""

    def __init__(self, ws, request, resolved, source, tmp: str, progress=None, cancelled=None):
        self.ws = ws
        self.request = request
        self.fn_item = resolved.fn_item
        self.model = resolved.model          # the root model's name
        self.dims = dict(resolved.dims)
        self.params = list(resolved.specs)
        self.tmp = tmp
        self.notes: list = []                # lines a writer wants shown to the user
        self._source = source                # a WeightSource, or None for random weights
        # what an imported checkpoint brings along (bos/eos/pad ids, context length), and a
        # GGUF input's tokenizer metadata; empty for weights keyed by param paths
        self.imported: dict = source.settings() if hasattr(source, "settings") else {}
        self.imported_tokenizer: list = source.tokenizer_fields() if hasattr(source, "tokenizer_fields") else []
        self._spec = {s.path: s for s in self.params}
        self._progress = progress
        self._cancelled = cancelled
        self.bytes_written = 0

    # ---- params
    def spec(self, path: str) -> ParamSpec:
        return self._spec[path]

    def stored_dtype(self, path: str) -> str:
        """The dtype `path` is stored in by `write_safetensors`: the request's for floats."""
        return stored_dtype(self._spec[path].dtype, self.request.dtype)

    def read(self, path: str):
        """One param as a numpy array of its source dtype (bf16 as float32 holding bf16
        values), from the weights or the random initializer."""
        spec = self._spec.get(path)
        if spec is None:
            raise KeyError(f"`{path}` is no param of `{self.model}`")
        if self._source is not None:
            return self._source.read(path)
        from ..weights.random_init import random_tensor  # deferred: numpy
        return random_tensor(spec, self.request.seed)

    @contextmanager
    def writing_into(self, directory: str):
        """Write under `directory` (a folder inside the temporary) for the block: a writer
        that puts another target's files in a subfolder (litert's `hf/`)."""
        directory = os.path.abspath(directory)
        if not directory.startswith(os.path.abspath(self.tmp) + os.sep):
            raise ValueError(f"a writer writes only under its temporary: {directory}")
        saved, self.tmp = self.tmp, directory
        try:
            yield directory
        finally:
            self.tmp = saved

    # ---- progress and cancel
    def progress(self, message: str, done: int, total: int):
        if self._progress is not None:
            self._progress(message, done, total)

    def check_cancelled(self):
        if self._cancelled is not None and self._cancelled():
            raise ExportCancelled()

    # ---- streaming safetensors
    def write_safetensors(self, file: str, entries, metadata=None) -> int:
        """Write a safetensors file, tensor by tensor; its size in bytes.

        `entries`: [(key, param_path)] or [(key, param_path, transform)] or
        [(key, param_path, transform, shape)]. `param_path` may also be a numpy array
        (a constant tensor the writer computed). `transform` maps the param's array to
        the array to store, with the same element count; its result must have the
        param's shape unless the entry gives the stored `shape`. Floats are stored in
        the request's dtype. The header (every key, shape and offset) is written
        first; a param stored unchanged is copied without holding it in memory.
        """
        file = file if os.path.isabs(file) else os.path.join(self.tmp, file)
        if not os.path.abspath(file).startswith(os.path.abspath(self.tmp)):
            raise ValueError(f"a writer writes only under its temporary: {file}")
        plan = []
        for e in entries:
            key, src = e[0], e[1]
            transform = e[2] if len(e) > 2 else None
            shape = tuple(e[3]) if len(e) > 3 and e[3] is not None else None
            if isinstance(src, str):
                spec = self._spec.get(src)
                if spec is None:
                    raise KeyError(f"`{src}` is no param of `{self.model}`")
                stored = stored_dtype(spec.dtype, self.request.dtype)
                shape = shape or spec.shape
            else:  # a constant array
                arr = transform(src) if transform is not None else src
                transform = None
                name = from_numpy(str(arr.dtype))
                if name is None:
                    raise ValueError(f"a constant `{key}` of dtype {arr.dtype} can't be stored")
                stored = stored_dtype(name, self.request.dtype)
                src, shape = arr, shape or tuple(arr.shape)
            plan.append((key, src, transform, shape, stored))
        header, layout = build_header([(k, TO_ST[st], sh) for k, _, _, sh, st in plan], metadata)
        total = layout[-1][2] if layout else len(header)
        self.check_cancelled()
        with open(file, "wb", buffering=0) as fh:
            _write_all(fh, header)
            for (key, src, transform, shape, stored), (_, start, end) in zip(plan, layout):
                self.check_cancelled()
                self.progress(f"writing {os.path.basename(file)}: {key}", start, total)
                if isinstance(src, str) and transform is None and self._source is not None:
                    info = self._source.info(src)
                    if info.dtype == stored:
                        self._source.copy_into(src, fh, self.check_cancelled)
                    else:
                        from ..weights.convert import to_stored  # deferred: numpy
                        for chunk in self._source.stream_chunks(src, CHUNK_ELEMENTS):
                            self.check_cancelled()
                            _write_array(fh, to_stored(chunk, stored))
                elif isinstance(src, str) and transform is None:
                    # random weights, generated and written piece by piece
                    from ..weights.convert import to_stored  # deferred: numpy
                    from ..weights.random_init import random_chunks  # deferred: numpy
                    for chunk in random_chunks(self._spec[src], self.request.seed, CHUNK_ELEMENTS):
                        self.check_cancelled()
                        _write_array(fh, to_stored(chunk, stored))
                else:
                    from ..weights.convert import to_stored  # deferred: numpy
                    arr = self.read(src) if isinstance(src, str) else src
                    if transform is not None:
                        arr = transform(arr)
                        if tuple(arr.shape) != tuple(shape):
                            raise ValueError(f"the transform of `{key}` gives {list(arr.shape)}, but the "
                                             f"header says {list(shape)}: give the shape as the entry's 4th item")
                    elif tuple(arr.shape) != tuple(shape):
                        arr = arr.reshape(shape)
                    out = to_stored(arr, stored)
                    del arr
                    _write_array(fh, out)
                    del out
                if fh.tell() != end:
                    raise ExportError(f"`{key}` came out {fh.tell() - start} bytes long, not {end - start}")
            self.progress(f"wrote {os.path.basename(file)}", total, total)
        self.bytes_written += total
        return total


def _write_all(fh, data):
    view = memoryview(data)
    while view:
        n = fh.write(view)
        if n is None or n <= 0:
            raise OSError(28, "No space left on device")
        view = view[n:]


def _write_array(fh, arr):
    import numpy as np  # deferred: the checker imports no numpy
    flat = np.ascontiguousarray(arr).reshape(-1)
    _write_all(fh, memoryview(flat.view(np.uint8)))
