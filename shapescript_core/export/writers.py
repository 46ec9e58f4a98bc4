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

from ..targets import TARGETS
from .errors import WriterUnavailable

WRITERS = {"hf": "shapescript_core.export.hf.writer:write",
           "vllm": "shapescript_core.export.vllm.writer:write",
           "gguf": "shapescript_core.export.gguf.writer:write"}
KIND = {"hf": "dir", "vllm": "dir", "gguf": "file"}  # gguf output is one .gguf file
DTYPES = {"hf": ("f32", "f16", "bf16"), "vllm": ("f32", "f16", "bf16"), "gguf": ("f32", "f16", "bf16", "q8_0")}


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

