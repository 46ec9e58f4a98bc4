"""A `.gguf` file read as a checkpoint: tensors by their roles (the file's names read back
by `gguf_format.names.role_key`; a name no role has stays as it is), already in
llama.cpp's layout (the importer undoes its Q/K row permutation with the plan's own
steps), dequantized by gguf-py (`gguf.quants.dequantize`: F16, BF16, Q8_0, Q4_0, Q4_1,
Q5_0, Q5_1, the K-quants...) one tensor at a time. The file is memory-mapped, so a tensor
is read when it is dequantized and the page cache holds the rest.
"""
from __future__ import annotations

import os

import gguf
import numpy as np
from gguf.quants import _type_traits  # what gguf-py can dequantize
from gguf.quants import dequantize

from ..export_errors import ExportError
from ..arch.archs import FAMILIES
from ..arch.match import NO_CAP  # a gemma2 cap this large is none (what --gguf writes for none)
from ..gguf_format.names import key as meta_key, role_key

BUFFERS = ("rope_freqs.weight",)
MAGIC = b"GGUF"
DEQUANTIZE_CHUNK = 16 * 1024 * 1024  # bytes of float32 dequantized at a time


def is_gguf(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


class GGUFCheckpoint:
    kind = "gguf"

    def __init__(self, file: str):
        self.path = file
        self.name = os.path.basename(file)
        try:
            self.reader = gguf.GGUFReader(file)
        except (ValueError, KeyError, IndexError, TypeError, OverflowError, OSError) as e:
            raise ExportError(f"{self.name} is not a GGUF file that can be read: {e} "
                              f"(the file is truncated or corrupt)") from None
        self.tensors = {t.name: t for t in self.reader.tensors}
        size = os.path.getsize(file)
        for t in self.reader.tensors:
            if t.data_offset + t.n_bytes > size or t.data.nbytes != t.n_bytes:
                raise ExportError(f"{self.name} is not a GGUF file that can be read: `{t.name}` runs past "
                                  f"the end of the file (the file is truncated)")
        self.arch = self.string("general.architecture") or "?"
        self.family = self.arch if self.arch in FAMILIES else None  # llama.cpp's name is the family's
        self.model_type = self.arch
        self.names: dict = {}  # role key (roles.tensor_key) -> (the file's tensor name, ())
        self.unknown: list = []

    # ---- metadata
    def field(self, key: str):
        f = self.reader.get_field(key)
        if f is None or not f.types:
            return None
        try:
            return f.contents()
        except (ValueError, IndexError, UnicodeDecodeError):
            return None

    def string(self, key: str) -> str | None:
        v = self.field(key)
        return v if isinstance(v, str) else None

    def label(self) -> str:
        return f"a GGUF `{self.arch}` model ({self.name})"

    def constants(self) -> dict:
        out = {}
        defaults = FAMILIES[self.arch].gguf_defaults if self.arch in FAMILIES else {}
        theta = self.field(meta_key("freq_base", self.arch))
        eps = self.field(meta_key("rms_eps", self.arch))
        if eps is None:
            eps = self.field(meta_key("ln_eps", self.arch))
        if isinstance(theta, (int, float)):
            out["theta"] = float(theta)
        if isinstance(eps, (int, float)):
            out["eps"] = float(eps)
        window = self.field(meta_key("sliding_window", self.arch))
        if isinstance(window, int) and window > 0:
            out["window"] = float(window)
            swa = self.field(meta_key("freq_base_swa", self.arch))
            if "theta_swa" in defaults:  # gemma3: what llama.cpp's windowed layers use when the file doesn't say
                out["theta_swa"] = float(swa) if isinstance(swa, (int, float)) else defaults["theta_swa"]
        for short in ("attn_softcap", "final_softcap"):  # gemma2: llama.cpp caps these always
            if short in defaults:
                v = self.field(meta_key(short, self.arch))
                v = float(v) if isinstance(v, (int, float)) else defaults[short]
                if v < NO_CAP:
                    out[short] = v
        return out

    def rope_scaling(self) -> str | None:
        """How the file scales its rope, in words, when it does: `rope.scaling.type` with
        its factor (and yarn's original context), or llama3's divisors in `rope_freqs`
        (arch/rope_gguf.py says how --gguf writes each)."""
        kind = self.rope_scaling_kind()
        if kind == "none":
            return None
        if kind == "llama3":
            freqs = self.rope_freqs()
            return f"per-frequency divisors {min(freqs):g} to {max(freqs):g} (rope_freqs.weight)"
        factor = self.field(f"{self.arch}.rope.scaling.factor")
        out = kind + (f", factor {factor:g}" if isinstance(factor, (int, float)) else "")
        original = self.field(f"{self.arch}.rope.scaling.original_context_length")
        return out + (f", original context {original}" if kind == "yarn" and isinstance(original, int) else "")

    def rotary_dims(self) -> tuple | None:
        """(the features of each head the rope rotates, where the file says so)."""
        k = meta_key("rope_dim", self.arch)
        v = self.field(k)
        return (v, f"`{k}`") if isinstance(v, int) and v > 0 else None

    def rope_scaling_kind(self) -> str:
        """"none", "linear", "yarn" (rope.scaling.type), or "llama3" where the file has a
        `rope_freqs` tensor that divides some frequency."""
        kind = self.string(f"{self.arch}.rope.scaling.type")
        if kind not in (None, "none"):
            return kind
        freqs = self.rope_freqs()
        return "llama3" if freqs is not None and any(f != 1.0 for f in freqs) else "none"

    def rope_freqs(self) -> tuple | None:
        t = self.tensors.get("rope_freqs.weight")
        if t is None or t.tensor_type != gguf.GGMLQuantizationType.F32:
            return None
        return tuple(float(x) for x in np.asarray(t.data, dtype=np.float32).reshape(-1))

    def rope_scaling_values(self) -> dict:
        """The file's numbers for the source's keywords of its scaling (check/rope_scaling.py)."""
        out = {}
        factor = self.field(f"{self.arch}.rope.scaling.factor")
        if isinstance(factor, (int, float)):
            out["factor"] = float(factor)
        original = self.field(f"{self.arch}.rope.scaling.original_context_length")
        if isinstance(original, int):
            out["original_positions"] = original
        return out

    def block_count(self) -> int | None:
        found = self.blocks()
        return found[0] if found else None

    def blocks(self) -> tuple | None:
        """(the number of blocks, where it is read), or None when the file doesn't say."""
        k = meta_key("block_count", self.arch)
        v = self.field(k)
        return (int(v), f"`{k}`") if isinstance(v, int) and v > 0 else None

    def heads(self) -> dict:
        out = {}
        for short in ("head_count", "head_count_kv", "expert_used_count"):
            k = meta_key(short, self.arch)
            v = self.field(k)
            if isinstance(v, int):
                out[short] = (v, f"`{k}`")
        return out

    def routing_renormalised(self) -> tuple | None:
        """(whether llama.cpp divides the K chosen weights by their sum, where the file says
        so): `expert_weights_norm` where the file has it, else the llama and qwen3moe
        mixtures' routing, which always does; None for a file of no mixture."""
        k = f"{self.arch}.expert_weights_norm"
        v = self.field(k)
        if isinstance(v, bool):
            return v, f"`{k}`"
        if isinstance(self.field(meta_key("expert_count", self.arch)), int) and self.arch in ("llama", "qwen3moe"):
            return True, f"`general.architecture` ({self.arch}, whose mixture always divides)"
        return None

    def context_length(self) -> int | None:
        v = self.field(meta_key("context_length", self.arch))
        return int(v) if isinstance(v, int) and v > 0 else None

    # ---- what comes along: the embedded tokenizer, special ids, the context length
    def directory(self) -> str | None:
        return None

    def tokenizer_dir(self) -> str | None:
        return None

    def tokenizer_fields(self) -> list:
        """[(key, value, GGUFValueType, sub type)] of the file's tokenizer.* metadata."""
        out = []
        for name, f in self.reader.fields.items():
            if name.startswith("tokenizer.") and f.types:
                sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
                out.append((name, _contents(f, sub), f.types[0], sub))
        return out

    def settings(self) -> dict:
        out: dict = {}
        for k in ("bos", "eos", "padding"):
            v = self.field(f"tokenizer.ggml.{k}_token_id")
            if isinstance(v, int):
                out[f"{'pad' if k == 'padding' else k}_token_id"] = v
        ctx = self.context_length()
        if ctx:
            out["context_length"] = ctx
        if self.string("tokenizer.ggml.model") not in (None, "none"):
            out["gguf_file"] = self.path  # transformers builds a Hugging Face tokenizer from it
        return out

    # ---- names: the file's own, read by role
    def index(self, arch: str, blocks: int, heads: int, kv_heads: int):
        for name in self.tensors:
            if name in BUFFERS:
                continue
            self.names[role_key(name)] = (name, ())

    def index_raw(self):
        self.names = {n: (n, ()) for n in self.tensors}

    def key_of(self, name: str) -> str:
        """The file's own name of a tensor named by its role (or by its own name)."""
        return self.names[name][0] if name in self.names else name

    def file_of(self, name: str) -> str:
        return self.name

    def shape(self, name: str) -> tuple:
        return tuple(int(d) for d in reversed(self.tensors[self.key_of(name)].shape.tolist()))

    def dtype(self, name: str) -> str:
        t = self.tensors[self.key_of(name)].tensor_type
        return {"F32": "f32", "F16": "f16"}.get(t.name, "f32")  # quantized types dequantize to f32

    def qtype(self, name: str) -> str:
        return self.tensors[self.key_of(name)].tensor_type.name

    def to_gguf(self, name: str) -> tuple:
        return ()

    def problem(self, name: str) -> str | None:
        name = self.key_of(name)
        q = self.tensors[name].tensor_type
        if q in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16) or q in _type_traits:
            return None
        return (f"`{name}` in {self.name} is {q.name}, which gguf-py can't dequantize: "
                f"re-quantize the model to another type (Q8_0, Q4_K, F16...)")

    def read(self, name: str):
        """The tensor in float32, dequantized a few rows at a time into the one array
        returned: gguf-py's dequantization makes temporaries the size of its output, so
        the whole tensor at once would hold it about twice."""
        name = self.key_of(name)
        t = self.tensors[name]
        shape = self.shape(name)
        data = np.asarray(t.data)
        rows = data.reshape(-1, data.shape[-1]) if data.ndim > 1 else data.reshape(1, -1)
        out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.float32)
        step = max(1, (DEQUANTIZE_CHUNK // 4) // max(1, out.size // max(1, rows.shape[0])))
        pos = 0
        try:
            for i in range(0, rows.shape[0], step):
                x = np.asarray(dequantize(rows[i:i + step], t.tensor_type), dtype=np.float32).reshape(-1)
                out[pos:pos + x.size] = x
                pos += x.size
        except (NotImplementedError, ValueError) as e:
            raise ExportError(f"can't dequantize `{name}` ({t.tensor_type.name}) from {self.name}: {e}") from None
        if pos != out.size:
            raise ExportError(f"can't dequantize `{name}` ({t.tensor_type.name}) from {self.name}: "
                              f"{pos} values for a tensor of {out.size}")
        return out.reshape(shape)

    def can_copy(self, name: str) -> bool:
        return False

    def quantized(self, names) -> dict:
        """{GGML type: how many} of the named tensors (by role) stored quantized, which an
        import dequantizes to float32."""
        out: dict = {}
        for name in names:
            q = self.tensors[self.key_of(name)].tensor_type
            if q not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
                         gguf.GGMLQuantizationType.BF16):
                out[q.name] = out.get(q.name, 0) + 1
        return out


def _contents(f, sub):
    """A field's value; its strings as the file's bytes where they are not UTF-8 (a
    vocabulary copied as it is: gguf-py's writer takes bytes for a string)."""
    try:
        return f.contents()
    except UnicodeDecodeError:
        strings = sub == gguf.GGUFValueType.STRING or f.types[0] == gguf.GGUFValueType.STRING
        if not strings:
            raise
        raw = [f.parts[i].tobytes() for i in f.data]
        return raw if sub is not None else raw[0]
