"""The one export request: options, defaults, validation and path resolution, shared
by `shapescript export` and the language server's `shapescript.export`.

Defaults, in order: the explicit option (a CLI flag, a command argument), then the
settings (`shapescript.toml`'s `[export]` and `[dims]` tables, and in the editor the
workspace configuration over them), then the built-in default. Paths given explicitly
resolve against the caller's directory (the CLI's working directory, the editor's
workspace root); paths from `shapescript.toml` resolve against the directory holding it.

- output: `<file stem>-<target>` beside the source (`<stem>.gguf` for gguf);
- weights: `--weights`, else the settings' `weights`, else random weights from the
  fields' initializers, which the request says (`random_reason`) so the user is told;
- dtype: f32; the quantized types (q8_0, q4_0, q4_k_m, ..., llama-quantize's names in any
  case) only for gguf; litert converts in f32 (the settings' dtype does not
  apply to it; `quantize="int8"` asks for int8 weights);
- litert's prefill and cache lengths: `litert.options` (its documented defaults).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from ..check.env import dim_value_problem
from ..check.suggest import closest
from ..settings import Config, load_config, settings_dir
from ..targets import TARGETS
from ..export_errors import KEEP_NEEDS_GGUF, RequestError
from .writers import DTYPES, KIND


@dataclass
class ExportRequest:
    path: str                       # the source file, absolute
    target: str                     # hf vllm gguf
    output: str                     # absolute; a directory, or a .gguf file for gguf
    fn: Optional[str] = None        # --fn; None: the @export function for the target, or `forward`
    weights: Optional[str] = None   # a .safetensors file, a directory, or an index .json; absolute
    random_weights: bool = False
    random_reason: str = ""         # why random weights are used when nobody asked for them
    seed: int = 0
    dtype: str = "f32"              # the stored dtype: f32 f16 bf16 (gguf also dtypes.QUANTIZED)
    force: bool = False             # replace an existing output
    dims: dict = field(default_factory=dict)  # NAME -> value, overriding the source
    tokenizer: Optional[str] = None  # a Hugging Face tokenizer directory, absolute
    weights_map: Optional[str] = None  # a TOML file of param paths to checkpoint keys, absolute
    explicit_dims: tuple = ()       # the dims named by the caller (not the settings): each must exist
    prefill_length: Optional[int] = None  # litert: the prefill signature's length (None: the default)
    cache_length: Optional[int] = None    # litert: the KV cache's length (None: the default)
    quantize: Optional[str] = None        # litert: None (float32) or "int8" (dynamic int8 weights)
    split_cache: bool = False             # litert: export_hf's split-cache mode (embedder, auxiliary, model)
    max_tensor_size: Optional[int] = None  # bytes; None: export/sizes.py's default (settings' [limits])
    tensor_parallel: int = 1        # vllm: the ranks vLLM is to split it across (checked by E3307)

    @property
    def kind(self) -> str:
        return KIND[self.target]

    def weights_note(self) -> str:
        """How the weights were chosen, for the closing message."""
        if self.random_weights:
            note = f"random weights (seed {self.seed})"
            return f"{note}: {self.random_reason}" if self.random_reason else note
        return f"weights from {self.weights}"


def find_settings(path: str):
    """(Config, its directory) of the nearest `shapescript.toml` above `path`, or
    (empty Config, None)."""
    d = settings_dir(os.path.dirname(os.path.abspath(path)))
    return (load_config(d), d) if d is not None else (Config(), None)


def default_output(path: str, target: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"{stem}.gguf" if KIND[target] == "file" else f"{stem}-{target}"
    return os.path.join(os.path.dirname(os.path.abspath(path)), name)


def _resolve(p: Optional[str], base: Optional[str]) -> Optional[str]:
    if p is None:
        return None
    p = os.path.expanduser(p)
    if not os.path.isabs(p):
        p = os.path.join(base or os.getcwd(), p)
    return os.path.normpath(p)


def _positive_dims(dims) -> dict:
    out = {}
    for name, value in (dims or {}).items():
        if not str(name).isidentifier():
            raise RequestError(f"`{name}` is not a dim name")
        problem = dim_value_problem(value)
        if problem:
            raise RequestError(f"dim `{name}` {problem}, got `{value!s:.40}`")
        out[str(name)] = value
    return out


def make_request(path: str, target: str, *, fn: Optional[str] = None, output: Optional[str] = None,
                 weights: Optional[str] = None, random_weights: Optional[bool] = None,
                 seed: Optional[int] = None, dtype: Optional[str] = None, force: bool = False,
                 dims: Optional[dict] = None, tokenizer: Optional[str] = None,
                 prefill_length: Optional[int] = None, cache_length: Optional[int] = None,
                 quantize: Optional[str] = None, split_cache: Optional[bool] = None,
                 weights_map: Optional[str] = None, tensor_parallel: Optional[int] = None, settings=None,
                 settings_dir: Optional[str] = None,
                 base: Optional[str] = None) -> ExportRequest:
    """Validate the options and fill in the defaults; RequestError names what is wrong.

    `settings` is an `settings.Config` (None: the nearest `shapescript.toml` above the
    source); its relative paths resolve against `settings_dir`. Explicit relative paths
    resolve against `base` (None: the working directory).
    """
    if target not in TARGETS:
        raise RequestError(f"unknown target `{target}`: use one of {', '.join(TARGETS)}")
    path = os.path.normpath(os.path.abspath(path))
    if settings is None:
        settings, settings_dir = find_settings(path)
    defaults = settings.export
    if weights is not None and random_weights:
        raise RequestError("--weights and --random-weights exclude each other: give one")

    out = _resolve(output, base)
    if out is None and defaults.get("output"):
        out = _resolve(defaults["output"], settings_dir or base)
        if KIND[target] == "file" and not out.endswith(".gguf"):
            out += ".gguf"
    if out is None:
        out = default_output(path, target)
    if out == path or os.path.abspath(path).startswith(out.rstrip(os.sep) + os.sep):
        raise RequestError(f"the output `{out}` would replace the source")  # imported ones: output.py

    reason = ""
    w = _resolve(weights, base)
    rand = bool(random_weights)
    if w is None and not rand:
        if defaults.get("weights"):
            w = _resolve(defaults["weights"], settings_dir or base)
        elif defaults.get("random_weights"):
            rand = True
        else:
            rand = True
            reason = "no weights were named (--weights, or `weights` in the settings)"
    if w is not None and not os.path.exists(w):
        raise RequestError(f"can't read the weights `{w}`: no such file or directory")

    s = seed if seed is not None else defaults.get("seed", 0)
    if isinstance(s, bool) or not isinstance(s, int) or s < 0:
        raise RequestError(f"the seed takes a non-negative integer, got `{s}`")
    dt = dtype or (defaults.get("gguf_dtype") if target == "gguf" else None) \
        or (None if target == "litert" else defaults.get("dtype")) or "f32"
    if not isinstance(dt, str):
        raise RequestError(f"the dtype takes a name (f32, f16, bf16, q8_0, q4_k_m...), got `{dt}`")
    dt = dt.lower()  # llama-quantize's spelling, Q4_K_M, is fine
    if target == "litert" and dt != "f32":
        raise RequestError(f"--litert converts in float32, not {dt}: pass --quantize int8 for int8 weights")
    if dt not in DTYPES[target]:
        if dt in DTYPES["gguf"]:
            raise RequestError(f"--dtype {dt} is for gguf only: use f32, f16 or bf16")
        raise RequestError(f"--dtype takes one of {', '.join(DTYPES[target])}, got `{dt}`")
    if dt == "keep" and (rand or w is None or os.path.isdir(w)):  # a file's kind is read later, from its bytes
        raise RequestError(KEEP_NEEDS_GGUF)

    wmap = _resolve(weights_map, base)
    if wmap is None and defaults.get("weights_map") and w is not None:
        wmap = _resolve(defaults["weights_map"], settings_dir or base)
    if wmap is not None and w is None:
        raise RequestError("--weights-map maps the tensors of --weights: name the weights too")
    if wmap is not None and not os.path.isfile(wmap):
        raise RequestError(f"can't read the weights map `{wmap}`: no such file")
    tok = _resolve(tokenizer, base)
    if tok is not None:
        check_tokenizer_dir(tok)
    litert = _litert_options(target, prefill_length, cache_length, quantize, split_cache, defaults)
    given = _positive_dims(dims)
    tp = _tensor_parallel(target, tensor_parallel, defaults)
    return ExportRequest(**litert, tensor_parallel=tp, path=path, target=target, output=out, fn=fn, weights=w, random_weights=rand,
                         random_reason=reason, seed=s, dtype=dt, force=bool(force),
                         dims={**settings.dims, **given}, tokenizer=tok, weights_map=wmap,
                         explicit_dims=tuple(given),
                         max_tensor_size=getattr(settings, "max_tensor_size", None))


def _tensor_parallel(target: str, ranks, defaults) -> int:
    """--tensor-parallel (else the settings' `[export.vllm] tensor_parallel`): vllm only."""
    if ranks is not None and target != "vllm":
        raise RequestError("--tensor-parallel is for --vllm only")
    if ranks is None:
        ranks = defaults.get("tensor_parallel", 1) if target == "vllm" else 1
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise RequestError(f"--tensor-parallel takes a number of ranks (1 or more), got `{ranks}`")
    return ranks


def _litert_options(target: str, prefill, cache, quantize, split_cache, defaults) -> dict:
    """LiteRT's options, validated; each is a usage error for another target."""
    given = {"--prefill-length": prefill, "--cache-length": cache, "--quantize": quantize,
             "--split-cache": split_cache or None}
    if target != "litert":
        named = [k for k, v in given.items() if v is not None]
        if named:
            raise RequestError(f"{named[0]} is for --litert only")
        return {}
    prefill = prefill if prefill is not None else defaults.get("prefill_length")
    cache = cache if cache is not None else defaults.get("cache_length")
    for flag, v in (("--prefill-length", prefill), ("--cache-length", cache)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise RequestError(f"{flag} takes a positive integer, got `{v}`")
    if prefill is not None and cache is not None and prefill > cache:
        raise RequestError(f"the prefill length {prefill} is longer than the cache length {cache}: "
                           "the cache must hold the whole prefill")
    if quantize not in (None, "none", "int8"):
        raise RequestError(f"--quantize takes int8 (or none), got `{quantize}`")
    return {"prefill_length": prefill, "cache_length": cache, "quantize": None if quantize == "none" else quantize,
            "split_cache": bool(split_cache)}


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")  # what the writers copy or read


def check_tokenizer_dir(d: str):
    if not os.path.isdir(d):
        raise RequestError(f"--tokenizer takes a Hugging Face tokenizer directory; `{d}` is not a directory")
    if not any(os.path.isfile(os.path.join(d, n)) for n in TOKENIZER_FILES):
        raise RequestError(f"`{d}` holds no tokenizer: a Hugging Face tokenizer directory has "
                           f"{', '.join(TOKENIZER_FILES[:-1])} or {TOKENIZER_FILES[-1]}")


def unknown_dims(ws, paths, names) -> Optional[str]:
    """A usage message when a `--dim` names no dim visible in the files, else None."""
    envs = [a.env for a in map(ws.analyze, paths) if a is not None]
    bad = [n for n in names if not any(env.dims.is_dim(n) for env in envs)]
    if not bad:
        return None  # (no set of every dim's name: a file may declare a million)
    known: set = set()
    for env in envs:
        known.update(env.dim_names())
    what = ", ".join(f"`{n}`" for n in bad)
    verb = "is no dim" if len(bad) == 1 else "are no dims"
    msg = f"--dim {what} {verb} of {', '.join(os.path.basename(p) for p in paths)}"
    sug = closest(bad[0], sorted(known)) if len(bad) == 1 else None
    if sug:
        msg += f" (did you mean `{sug}`?)"
    msg += f"; its dims are {', '.join(sorted(known))}" if known else "; it declares no dims"
    return msg
