"""Project settings: `shapescript.toml` at the workspace root, and the editor's settings.

    default_targets = ["hf", "vllm"]   # export checks for an unmarked `forward`
    [dims]                             # dim overrides, as `--dim NAME=VALUE`
    D = 512
    [export]                           # defaults of the export command
    weights = "weights.safetensors"    # or random_weights = true, seed = 0
    output = "exported"
    dtype = "f16"
    prefill_length = 128               # --litert's (see docs/serving-engines.md)
    cache_length = 1024
    [export.vllm]                      # vLLM's splits, checked by E3307 (docs/serving-engines.md)
    tensor_parallel = 2                # the ranks vLLM splits each layer across
    [export.gguf]
    dtype = "q4_k_m"                   # --gguf's own: llama.cpp's quantized types, or "keep"
    exclude = ["build", "generated/*.ss"]  # what `shapescript check` skips in folders
    [limits]                           # what the tools read and write (docs/security.md)
    max_file_size = "32 MiB"           # the largest source, import or settings file read
    max_tensor_size = "16 GiB"         # the largest tensor an export writes

Sizes are bytes, or strings with a unit ("16 MiB", "2GB"). The editor's settings
(section `shapescript`) take the same keys, camelCase accepted (`limits.maxFileSize`),
and override the file's. Invalid entries are left out and described in `problems`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .check.env import dim_value_problem
from .dtypes import QUANTIZED, STORED
from .files import Access, ReadRefused, parse_size, read_bytes
from .targets import TARGETS

FILE_NAME = "shapescript.toml"
DTYPES = STORED  # `[export] dtype`: every target's
GGUF_DTYPES = STORED + tuple(QUANTIZED) + ("keep",)  # `[export.gguf] dtype`: --gguf's own


@dataclass
class Config:
    default_targets: Optional[list] = None
    dims: dict = field(default_factory=dict)
    export: dict = field(default_factory=dict)  # output weights random_weights seed dtype tensor_parallel
    problems: list = field(default_factory=list)
    exclude: list = field(default_factory=list)  # glob patterns (docs/command-line.md)
    max_file_size: Optional[int] = None    # [limits]; None: the default (files.DEFAULT_FILE_LIMIT)
    max_tensor_size: Optional[int] = None  # [limits]; None: the default (export/sizes.py)

    def check_inputs(self) -> tuple:
        """(dim overrides, default targets or None, tensor-parallel ranks): what the
        checks read of the settings."""
        return dict(self.dims), (set(self.default_targets) if self.default_targets else None), \
            self.export.get("tensor_parallel", 1)

    def apply_to(self, ws):
        """Set `check_inputs` on a Workspace (each setter keeps its analyses when its
        value is the same)."""
        dims, targets, ranks = self.check_inputs()
        ws.set_dim_overrides(dims)
        ws.set_default_targets(targets)
        ws.set_tensor_parallel(ranks)

    def merged(self, over: "Config") -> "Config":
        return Config(over.default_targets if over.default_targets is not None else self.default_targets,
                      {**self.dims, **over.dims}, {**self.export, **over.export},
                      self.problems + over.problems, self.exclude + over.exclude,
                      over.max_file_size or self.max_file_size, over.max_tensor_size or self.max_tensor_size)


def _positive(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _get(d: dict, *names):
    for n in names:
        if n in d:
            return d[n]
    return None


def parse_settings(data, source: str = "settings") -> Config:
    cfg = Config()
    if data is None:
        return cfg
    if not isinstance(data, dict):
        cfg.problems.append(f"{source}: expected a table of settings")
        return cfg
    targets = _get(data, "default_targets", "defaultTargets")
    if targets is not None:
        if isinstance(targets, str):
            targets = [targets]
        if isinstance(targets, list) and all(t in TARGETS for t in targets):
            cfg.default_targets = list(targets)
        else:
            cfg.problems.append(f"{source}: `default_targets` takes a list of {', '.join(TARGETS)}")
    dims = data.get("dims")
    if dims is not None:
        if not isinstance(dims, dict):
            cfg.problems.append(f"{source}: `dims` takes a table of NAME = VALUE")
        else:
            for name, value in dims.items():
                problem = dim_value_problem(value)
                if problem or not str(name).isidentifier():
                    cfg.problems.append(f"{source}: dim `{name}` {problem or 'is no dim name'}, got `{value!s:.40}`")
                else:
                    cfg.dims[str(name)] = value
    export = data.get("export")
    if export is not None:
        if not isinstance(export, dict):
            cfg.problems.append(f"{source}: `export` takes a table")
        else:
            for key, names, ok in (("output", ("output",), lambda v: isinstance(v, str)),
                                   ("weights", ("weights",), lambda v: isinstance(v, str)),
                                   ("weights_map", ("weights_map", "weightsMap"), lambda v: isinstance(v, str)),
                                   ("random_weights", ("random_weights", "randomWeights"), lambda v: isinstance(v, bool)),
                                   ("seed", ("seed",), lambda v: isinstance(v, int) and not isinstance(v, bool)),
                                   ("dtype", ("dtype",), lambda v: v in DTYPES),
                                   ("prefill_length", ("prefill_length", "prefillLength"), _positive),
                                   ("cache_length", ("cache_length", "cacheLength"), _positive)):
                v = _get(export, *names)
                if v is None:
                    continue
                if ok(v):
                    cfg.export[key] = v
                else:
                    cfg.problems.append(f"{source}: `export.{key}` can't be `{v}`")
            _vllm_settings(export.get("vllm"), cfg, source)
            _gguf_settings(export.get("gguf"), cfg, source)
    exclude = data.get("exclude")
    if exclude is not None:
        if isinstance(exclude, list) and all(isinstance(p, str) and p.strip() for p in exclude):
            cfg.exclude = list(exclude)
        else:
            cfg.problems.append(f"{source}: `exclude` takes a list of glob patterns, like [\"build\"]")
    limits = data.get("limits")
    if limits is not None:
        if not isinstance(limits, dict):
            cfg.problems.append(f"{source}: `limits` takes a table")
        else:
            for key, names in (("max_file_size", ("max_file_size", "maxFileSize")),
                               ("max_tensor_size", ("max_tensor_size", "maxTensorSize"))):
                v = _get(limits, *names)
                if v is None:
                    continue
                n = parse_size(v)
                if n is None:
                    cfg.problems.append(f"{source}: `limits.{key}` takes a size in bytes or like \"16 MiB\", "
                                        f"got `{v!s:.40}`")
                else:
                    setattr(cfg, key, n)
    return cfg


def _vllm_settings(vllm, cfg: Config, source: str):
    """`[export.vllm]`: `tensor_parallel` (editor: `export.vllm.tensorParallel`)."""
    if vllm is None:
        return
    if not isinstance(vllm, dict):
        cfg.problems.append(f"{source}: `export.vllm` takes a table")
        return
    v = _get(vllm, "tensor_parallel", "tensorParallel")
    if v is None:
        return
    if _positive(v):
        cfg.export["tensor_parallel"] = v
    else:
        cfg.problems.append(f"{source}: `export.vllm.tensor_parallel` takes a number of ranks (1 or more), "
                            f"got `{v!s:.40}`")


def _gguf_settings(gguf, cfg: Config, source: str):
    """`[export.gguf]`: `dtype`, the GGUF export's own (llama.cpp's quantized types, `keep`),
    over `[export] dtype` (editor: `export.gguf.dtype`)."""
    if gguf is None:
        return
    if not isinstance(gguf, dict):
        cfg.problems.append(f"{source}: `export.gguf` takes a table")
        return
    v = _get(gguf, "dtype")
    if v is None:
        return
    if isinstance(v, str) and v.lower() in GGUF_DTYPES:
        cfg.export["gguf_dtype"] = v.lower()
    else:
        cfg.problems.append(f"{source}: `export.gguf.dtype` takes one of {', '.join(GGUF_DTYPES)}, got `{v!s:.40}`")


def settings_dir(start: str) -> Optional[str]:
    """The nearest folder holding a `shapescript.toml`, from `start` (a folder) upward;
    None when there is none."""
    d = os.path.abspath(start)
    while True:
        if os.path.isfile(os.path.join(d, FILE_NAME)):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def load_config(root: Optional[str]) -> Config:
    """The settings in `root/shapescript.toml`; empty when there is none."""
    if not root:
        return Config()
    path = os.path.join(root, FILE_NAME)
    try:
        raw = read_bytes(path, Access())  # regular and bounded, like every file read
    except ReadRefused as e:
        if e.refusal.kind == "missing":
            return Config()
        return Config(problems=[str(e)])
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib  # type: ignore
        except ImportError:
            return Config(problems=[f"{FILE_NAME}: reading it needs Python 3.11 or the `tomli` package"])
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return Config(problems=[f"{FILE_NAME}: {e}"])
    return parse_settings(data, FILE_NAME)
