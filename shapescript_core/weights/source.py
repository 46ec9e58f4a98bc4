"""Where the weights come from: a `.safetensors` file, a directory with
`model.safetensors` (or a sharded index), or a `model.safetensors.index.json`.

Opening reads only the headers; `read(key)` reads one tensor, and `copy_into(key, fh)`
copies its bytes into an open file without holding the tensor (kernel copy where the
system has one), so peak memory stays near one tensor however large the model;
`copy_rows_into(key, fh, order)` copies its rows in another order the same way.

An exported directory's mapping may give a param as a list of keys (a packed param the
export held as its parts, export/hf/keys.py): the param reads as those tensors' rows
one after another, which in the files' row-major bytes is the parts' bytes in order.
"""
from __future__ import annotations

import errno
import json
import os

from ..export_errors import ExportError
from ..files import ReadRefused, read_bytes
from .weight_messages import outside_weights, unreadable
from .row_copy import Truncated, copy_rows
from .safetensors_format import TensorInfo, read_header

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
MAPPING = "shapescript-weights.json"  # an earlier export's param path -> checkpoint key
CHUNK = 16 * 1024 * 1024
KERNEL_CHUNK = 256 * 1024 * 1024  # one copy_file_range: most tensors in one call; a cancel within a fraction of a second
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM}


def within(folder: str, rel: str, what: str) -> str:
    """The path of `rel` in the weights directory `folder`; ExportError when it leads out
    of it (an absolute path, `..`, a symbolic link pointing elsewhere)."""
    base = os.path.realpath(folder)
    path = os.path.normpath(os.path.join(folder, rel))
    real = os.path.realpath(path)
    inside = "\0" not in rel and not os.path.isabs(rel) and os.path.commonpath([real, base]) == base \
        and os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
    if not inside:
        raise ExportError(outside_weights(rel, folder, what))
    return path


class WeightSource:
    def __init__(self, path: str):
        self.path = path
        self.headers: list = []           # [HeaderInfo]
        self.where: dict = {}             # key -> HeaderInfo
        self.file_key: dict = {}          # key -> the file's key, where a mapping renames it
        self.joined: dict = {}            # key -> [(file key, HeaderInfo)]: a param stored as parts
        self.stacked: set = set()         # joined keys whose parts stack along a new first axis (experts)
        if os.path.isdir(path):
            if os.path.lexists(os.path.join(path, INDEX)):
                self._index(within(path, INDEX, "the index"))
            elif os.path.lexists(os.path.join(path, SINGLE)):
                self._single(within(path, SINGLE, "the file"))
            else:
                raise ExportError(f"the weights directory `{path}` has neither {SINGLE} nor {INDEX}")
            if os.path.lexists(os.path.join(path, MAPPING)):
                self._mapping(within(path, MAPPING, "the mapping"))
        elif path.endswith(".json"):
            self._index(path)
        else:
            self._single(path)

    def describe(self) -> str:
        if len(self.headers) == 1:
            return f"`{os.path.basename(self.headers[0].file)}`"
        return f"the {len(self.headers)} shards of `{os.path.basename(self.path)}`"

    def _mapping(self, file: str):
        """Read an exported directory back through its mapping: keys become param paths."""
        try:
            keys = json.loads(read_bytes(file).decode("utf-8")).get("keys")  # regular, bounded
        except ReadRefused as e:
            raise ExportError(f"can't read {MAPPING} in `{self.path}`: {e.refusal.reason}")
        except RecursionError:
            raise ExportError(f"can't read {MAPPING} in `{self.path}`: its JSON is nested too deeply") from None
        except (OSError, UnicodeDecodeError, ValueError, AttributeError) as e:
            raise ExportError(f"can't read {MAPPING} in `{self.path}`: {getattr(e, 'strerror', None) or e}")
        if not isinstance(keys, dict):
            raise ExportError(f"{MAPPING} in `{self.path}` has no `keys` of param paths to checkpoint keys")
        where = {}
        mapped = set()
        for param, key in keys.items():
            if isinstance(key, str) and key in self.where:
                where[param] = self.where[key]
                self.file_key[param] = key
                mapped.add(key)
            elif isinstance(key, list) and key and all(isinstance(k, str) and k in self.where for k in key):
                self._join(param, [(k, self.where[k]) for k in key])
                where[param] = self.where[key[0]]
                mapped.update(key)
        for key, h in self.where.items():  # keys no param maps to stay, to be warned about
            if key not in mapped and key not in where:
                where[key] = h
        self.where = where

    def _join(self, param: str, parts: list):
        infos = [h.tensors[k] for k, h in parts]
        first = infos[0]
        if any(t.dtype != first.dtype or tuple(t.shape[1:]) != tuple(first.shape[1:]) or not t.shape
               for t in infos):
            shown = ", ".join(f"`{k}` {t.dtype} {list(t.shape)}" for (k, _), t in zip(parts, infos))
            raise ExportError(f"{MAPPING} in `{self.path}` gives `{param}` as parts that don't stack by rows: {shown}")
        self.joined[param] = parts

    def stack(self, key: str, keys: list):
        """Read `keys` (one tensor per expert, `…experts.{i}.w1.weight`) as one tensor
        `key`, them stacked along a new first axis: the bytes are theirs one after another,
        copied as they are (the per-expert keys are no longer listed)."""
        parts = [(self.file_key.get(k, k), self.where[k]) for k in keys]
        infos = [h.tensors[k] for k, h in parts]
        first = infos[0]
        if any(t.dtype != first.dtype or tuple(t.shape) != tuple(first.shape) for t in infos):
            shown = ", ".join(f"`{k}` {t.dtype} {list(t.shape)}" for (k, _), t in zip(parts, infos))
            raise ExportError(f"the experts of `{key}` differ in shape or dtype: {shown}")
        self.joined[key] = parts
        self.stacked.add(key)
        self.where[key] = self.where[keys[0]]
        for k in keys:
            del self.where[k]

    def _pieces(self, key: str) -> list:
        """[(file key, TensorInfo, HeaderInfo)]: the tensor, or the parts a param is stored as."""
        parts = self.joined.get(key)
        if parts is not None:
            return [(k, h.tensors[k], h) for k, h in parts]
        k = self.file_key.get(key, key)
        h = self.where[key]
        return [(k, h.tensors[k], h)]

    def _single(self, file: str):
        h = read_header(file)
        self.headers.append(h)
        for k in h.tensors:
            self.where[k] = h

    def _index(self, file: str):
        name = os.path.basename(file)
        try:
            doc = json.loads(read_bytes(file).decode("utf-8"))  # regular, bounded
        except ReadRefused as e:
            raise ExportError(f"can't read the index {name}: {e.refusal.reason}")
        except RecursionError:
            raise ExportError(f"can't read the index {name}: its JSON is nested too deeply") from None
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ExportError(f"can't read the index {name}: {getattr(e, 'strerror', None) or e}")
        wm = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise ExportError(f"the index {name} has no `weight_map` of tensor names to files")
        base = os.path.dirname(os.path.abspath(file))
        shards: dict = {}
        for key, shard in wm.items():
            h = shards.get(shard)
            if h is None:
                sp = within(base, shard, f"the shard `{shard}` its index names")
                if not os.path.isfile(sp):
                    raise ExportError(unreadable(key, name, f"its shard `{shard}` does not exist"))
                h = shards[shard] = read_header(sp)
                self.headers.append(h)
            if key not in h.tensors:
                raise ExportError(unreadable(key, name, f"the index puts it in `{shard}`, which has no such tensor"))
            self.where[key] = h

    # ---- queries
    def keys(self) -> list:
        return list(self.where)

    def info(self, key: str) -> TensorInfo:
        pieces = self._pieces(key)
        if len(pieces) == 1:
            return pieces[0][1]
        infos = [t for _, t, _ in pieces]
        if key in self.stacked:
            first = infos[0]
            return TensorInfo(key, first.dtype, (len(infos),) + tuple(first.shape), first.start,
                              first.start + sum(t.nbytes for t in infos))
        rows = sum(t.shape[0] for t in infos)
        first = infos[0]  # start and end: the span's length, for the byte counts
        return TensorInfo(key, first.dtype, (rows,) + tuple(first.shape[1:]), first.start,
                          first.start + sum(t.nbytes for t in infos))

    def truncated(self, key: str):
        """Why the tensor can't be read whole, or None."""
        return next((h.truncated[k] for k, _, h in self._pieces(key) if k in h.truncated), None)

    def read(self, key: str):
        """The tensor as a numpy array of its dtype (bf16 as float32)."""
        pieces = self._pieces(key)
        if len(pieces) > 1:
            import numpy as np  # deferred: reading headers needs no numpy
            join = np.stack if key in self.stacked else np.concatenate
            return join([self._read_one(k, t, h) for k, t, h in pieces])
        return self._read_one(*pieces[0])

    def _read_one(self, key: str, t: TensorInfo, h):
        import numpy as np  # deferred: reading headers needs no numpy
        from .convert import NP, bf16_to_f32  # deferred: numpy
        if t.dtype not in NP and t.dtype != "bf16":
            raise ExportError(unreadable(key, os.path.basename(h.file), f"its dtype {t.dtype} can't be exported"))
        dt = np.uint16 if t.dtype == "bf16" else NP[t.dtype]
        count = t.nbytes // np.dtype(dt).itemsize
        try:
            with open(h.file, "rb") as fh:
                fh.seek(t.start)
                x = np.fromfile(fh, dtype=dt, count=count)
        except OSError as e:
            raise ExportError(unreadable(key, os.path.basename(h.file), e.strerror or str(e)))
        if x.size != count:
            raise ExportError(unreadable(key, os.path.basename(h.file), "the file ends inside it (truncated)"))
        x = x.reshape(t.shape)
        return bf16_to_f32(x) if t.dtype == "bf16" else x

    def copy_into(self, key: str, out, check_cancelled=None) -> int:
        """Append the tensor's bytes to the open binary file `out`; the bytes copied."""
        return sum(self._copy_one(k, t, h, out, check_cancelled) for k, t, h in self._pieces(key))

    def _copy_one(self, key: str, t: TensorInfo, h, out, check_cancelled) -> int:
        with open(h.file, "rb") as src:
            remaining = t.nbytes
            pos = t.start
            fast = hasattr(os, "copy_file_range")
            while remaining:
                if check_cancelled is not None:
                    check_cancelled()
                n = min(KERNEL_CHUNK, remaining)
                done = 0
                if fast:
                    try:
                        done = os.copy_file_range(src.fileno(), out.fileno(), n, pos)
                    except OSError as e:
                        if e.errno not in _NO_KERNEL_COPY:
                            raise  # a full disk, an I/O error: the export stops
                        fast = False  # another filesystem, or no support: copy by hand
                        done = 0
                if not fast:
                    src.seek(pos)
                    buf = src.read(min(CHUNK, remaining))
                    view = memoryview(buf)
                    while view:
                        view = view[out.write(view):]
                    done = len(buf)
                if done == 0:
                    raise ExportError(unreadable(key, os.path.basename(h.file), "the file ends inside it (truncated)"))
                pos += done
                remaining -= done
        return t.nbytes

    def copy_rows_into(self, key: str, out, order, check_cancelled=None) -> int:
        """Append the tensor's rows (its first axis) in `order`, a sequence of row indices,
        to the open binary file `out` without making an array (`row_copy`); the bytes.
        A param stored as parts: each run of rows from one part is copied from it."""
        t = self.info(key)
        rows = t.shape[0] if t.shape else 0
        order = list(order)
        if not rows or any(not 0 <= i < rows for i in order):
            raise ValueError(f"rows {order[:4]}... of `{key}` {list(t.shape)}")  # a caller's bug
        if key in self.stacked:  # a row is one expert's tensor
            pieces = self._pieces(key)
            return sum(self._copy_one(*pieces[i], out, check_cancelled) for i in order)
        pieces, firsts, at = self._pieces(key), [], 0
        for _, p, _ in pieces:
            firsts.append(at)
            at += p.shape[0]
        done, i = 0, 0
        while i < len(order):
            j = max(n for n, f in enumerate(firsts) if f <= order[i])  # the part row order[i] is in
            _, p, h = pieces[j]
            run = []
            while i < len(order) and firsts[j] <= order[i] < firsts[j] + p.shape[0]:
                run.append(order[i] - firsts[j])
                i += 1
            try:
                with open(h.file, "rb") as src:
                    done += copy_rows(src.fileno(), p.start, p.nbytes // p.shape[0], run, out, check_cancelled)
            except Truncated:
                raise ExportError(unreadable(key, os.path.basename(h.file),
                                             "the file ends inside it (truncated)")) from None
        return done

    def stream_chunks(self, key: str, elements: int):
        """Yield the tensor as flat numpy arrays of at most `elements` items (bf16 as float32)."""
        for k, t, h in self._pieces(key):
            yield from self._chunks_of(k, t, h, elements)

    def _chunks_of(self, key: str, t: TensorInfo, h, elements: int):
        import numpy as np  # deferred: reading headers needs no numpy
        from .convert import NP, bf16_to_f32  # deferred: numpy
        dt = np.uint16 if t.dtype == "bf16" else NP[t.dtype]
        item = np.dtype(dt).itemsize
        total = t.nbytes // item
        with open(h.file, "rb") as fh:
            fh.seek(t.start)
            done = 0
            while done < total:
                n = min(elements, total - done)
                x = np.fromfile(fh, dtype=dt, count=n)
                if x.size != n:
                    raise ExportError(unreadable(key, os.path.basename(h.file), "the file ends inside it (truncated)"))
                done += n
                yield bf16_to_f32(x) if t.dtype == "bf16" else x
