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
from .errors import WriterUnavailable

WRITERS = {"hf": "shapescript_core.export.hf.writer:write",
           "vllm": "shapescript_core.export.vllm.writer:write",
           "gguf": "shapescript_core.export.gguf.writer:write",
           "litert": "shapescript_core.export.litert.writer:write"}
KIND = {"hf": "dir", "vllm": "dir", "gguf": "file", "litert": "dir"}  # gguf output is one .gguf file
# The third-party libraries each writer imports: the `export` extra installs them. (litert's
# conversion runs in an environment of its own: REQUIRES)
LIBRARIES = {"hf": ("numpy",), "vllm": ("numpy",), "gguf": ("numpy", "gguf"), "litert": ("numpy",)}
INSTALL_EXTRA = "pip install 'shapescript[export]'"
# litert converts in float32 (its weights' precision is `--quantize`, not the dtype)
DTYPES = {"hf": STORED, "vllm": STORED, "gguf": STORED + tuple(QUANTIZED), "litert": ("f32",)}
# A target whose writer runs in an environment of its own: "module:function" that raises
# WriterUnavailable (a one-line message saying how to install it) when it is missing.
REQUIRES = {"litert": "shapescript_core.export.litert.env:require"}


def missing_libraries(target: str) -> str | None:
    """What to say when `target`'s writer lacks libraries here (none imported); None when
    it has them all: a plain install has none of the `export` extra."""
    missing = [m for m in LIBRARIES[target] if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"the {target} export needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            f"not installed: {INSTALL_EXTRA}")


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
