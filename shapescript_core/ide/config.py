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
    exclude = ["build", "generated/*.ss"]  # what `shapescript check` skips in folders

The editor's settings (section `shapescript`) take the same keys, camelCase accepted,
and override the file's. Invalid entries are left out and described in `problems`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from ..exporting import TARGETS

FILE_NAME = "shapescript.toml"
DTYPES = ("f32", "f16", "bf16")


@dataclass
class Config:
    default_targets: Optional[list] = None
    dims: dict = field(default_factory=dict)
    export: dict = field(default_factory=dict)  # output weights random_weights seed dtype
    problems: list = field(default_factory=list)
    exclude: list = field(default_factory=list)  # glob patterns (docs/command-line.md)

    def merged(self, over: "Config") -> "Config":
        return Config(over.default_targets if over.default_targets is not None else self.default_targets,
                      {**self.dims, **over.dims}, {**self.export, **over.export},
                      self.problems + over.problems, self.exclude + over.exclude)


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
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or not str(name).isidentifier():
                    cfg.problems.append(f"{source}: dim `{name}` takes a positive integer, got `{value}`")
                else:
                    cfg.dims[str(name)] = value
    export = data.get("export")
    if export is not None:
        if not isinstance(export, dict):
            cfg.problems.append(f"{source}: `export` takes a table")
        else:
            for key, names, ok in (("output", ("output",), lambda v: isinstance(v, str)),
                                   ("weights", ("weights",), lambda v: isinstance(v, str)),
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
    exclude = data.get("exclude")
    if exclude is not None:
        if isinstance(exclude, list) and all(isinstance(p, str) and p.strip() for p in exclude):
            cfg.exclude = list(exclude)
        else:
            cfg.problems.append(f"{source}: `exclude` takes a list of glob patterns, like [\"build\"]")
    return cfg


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
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return Config()
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
