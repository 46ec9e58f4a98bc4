"""The export targets and what their writers are given.

A writer is `write(ctx: ExportContext) -> str`, a one-line summary ("wrote OUT (hf: 12
tensors, 1.2 GB)"). It writes only under `ctx.tmp` (an empty directory for a "dir"
target, a not-yet-existing file path for a "file" target), which `run_export` renames
into place once the writer returns; it raises `ExportError` for a clean failure. The
writers are named here as lazy "module:function" strings: importing this module imports
neither the writers nor torch nor numpy, so the checker and the server start without them.
"""
from __future__ import annotations

import importlib
import importlib.util

from ..dtypes import QUANTIZED, STORED
from ..export_errors import WriterUnavailable

WRITERS = {"hf": "shapescript_core.export.hf.writer:write",
           "vllm": "shapescript_core.export.vllm.writer:write",
           "gguf": "shapescript_core.export.gguf.writer:write",
           "litert": "shapescript_core.export.litert.writer:write"}
KIND = {"hf": "dir", "vllm": "dir", "gguf": "file", "litert": "dir"}  # gguf output is one .gguf file
# The exporter's third-party libraries, by module name: the `export` extra's distributions
# (pyproject.toml, in its order; tests/test_export_libraries.py keeps the two equal), then
# torch, which no extra names (the user installs the build they want first). The writers
# and what they share (reading weights: numpy, and gguf for the roles and a .gguf
# checkpoint; transformers for a tokenizer) import them as they go, deep in an export: so
# `missing_libraries` asks for all of them, for every target, before anything runs, and
# names each one missing (a partial install says so in one line, not in a traceback).
# (litert's conversion runs in an environment of its own besides: REQUIRES)
EXPORT_EXTRA = ("safetensors", "numpy", "gguf", "rich", "transformers", "accelerate", "tokenizers")
LIBRARIES = EXPORT_EXTRA + ("torch",)
INSTALL_EXTRA = "pip install 'shapescript[export]'"
# litert converts in float32 (its weights' precision is `--quantize`, not the dtype)
# gguf: llama.cpp's quantized types too, and `keep` (a quantized .gguf in: its tensors as they came)
DTYPES = {"hf": STORED, "vllm": STORED, "gguf": STORED + tuple(QUANTIZED) + ("keep",), "litert": ("f32",)}
# A target whose writer runs in an environment of its own: "module:function" that raises
# WriterUnavailable (a one-line message saying how to install it) when it is missing.
REQUIRES = {"litert": "shapescript_core.export.litert.env:require"}


def missing_libraries(target: str) -> str | None:
    """What to say, in one line, when the exporter's libraries are not all installed here:
    every one that is missing, by name (found by `find_spec`, none imported); None when
    they all are. A plain install has none of them."""
    missing = [m for m in LIBRARIES if _missing(m)]
    if not missing:
        return None
    names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
    how = f"install torch (the build you want), then {INSTALL_EXTRA}" if "torch" in missing else INSTALL_EXTRA
    return f"the {target} export needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed: {how}"


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a module found but broken: its spec unreadable
        return True


def load_writer(target: str):
    """The target's `write` function; WriterUnavailable when its module is not there.

    Only a missing writer module counts as unavailable: an ImportError raised from
    inside the writer (a bug, or a dependency it lacks) propagates with its message.
    """
    spec = WRITERS[target]
    module, _, name = spec.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            raise WriterUnavailable(f"the checks pass, but the {target} writer is not available yet") from e
        raise
    return getattr(mod, name)



def check_requirements(target: str):
    """Raise WriterUnavailable when the target's own environment is missing."""
    spec = REQUIRES.get(target)
    if spec is None:
        return
    module, _, name = spec.partition(":")
    getattr(importlib.import_module(module), name)()
