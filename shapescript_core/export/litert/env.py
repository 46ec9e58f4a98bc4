"""Where LiteRT-Torch runs: the python of an environment that has `litert_torch`.

torch and litert_torch are not in the project's own environment (LiteRT-Torch's nightly
pins its own transformers and ai-edge-litert); the conversion runs as a subprocess of that
environment's python. In order:

1. `SHAPESCRIPT_LITERT_PYTHON`, a python to use as it is;
2. this interpreter, when it imports `litert_torch` (`pip install 'shapescript[litert]'`
   into an environment with torch 2.13);
3. `$SHAPESCRIPT_CACHE/venv-litert/bin/python` (default cache `~/.cache/shapescript`),
   built by `scripts/env_litert.sh` (which `scripts/setup.sh` runs), once complete.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Optional

from ...export_errors import WriterUnavailable

READY_MARK = ".shapescript-ready"  # written by scripts/env_litert.sh once the venv is complete
INSTALL = ("the LiteRT export needs LiteRT-Torch: run scripts/env_litert.sh (or scripts/setup.sh), "
           "or `pip install 'shapescript[litert]'` (pip --pre) into an environment with torch 2.13, "
           "or set SHAPESCRIPT_LITERT_PYTHON to a python that has it")


def cache_dir() -> Path:
    return Path(os.environ.get("SHAPESCRIPT_CACHE") or Path.home() / ".cache" / "shapescript")


def venv_python() -> Optional[str]:
    venv = cache_dir() / "venv-litert"
    python = venv / "bin" / "python"
    if python.exists() and (venv / READY_MARK).exists():
        return str(python)
    return None


def litert_python() -> Optional[str]:
    """The python that runs the conversion, or None when there is none."""
    given = os.environ.get("SHAPESCRIPT_LITERT_PYTHON")
    if given:
        return given if os.path.exists(given) else None
    if importlib.util.find_spec("litert_torch") is not None:
        return sys.executable
    return venv_python()


def require() -> str:
    """The python; WriterUnavailable (one line: how to install) when there is none."""
    python = litert_python()
    if python is None:
        raise WriterUnavailable(INSTALL)
    return python
