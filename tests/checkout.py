"""Where the tests find things: this checkout, its test programs, the shared contract
beside it when there is one, and the CLI under test (found here, and only here).

- `ROOT`: the checkout. `PROGRAMS`: `tests/programs/`, the programs the tests read (the
  conformance cases they use are copied into `tests/programs/ok/` and `.../export/`, the
  security reproductions into `.../security/`, so a plain clone passes its tests;
  `test_conformance.py` checks the copies still match).
- `SHARED`: the shared contract (`../shared`, or `$SHAPESCRIPT_SHARED`), `None` when it is
  not beside the checkout. Tests of the contract itself (the conformance cases, the error
  catalog) carry `@requires_shared`: skipped, with the reason shown, in a plain clone.
- `CLI`: the command line under test, `python -m shapescript_core.cli` with this
  interpreter and this checkout first on the path; `shapescript(...)` runs it.
  `tests/test_install.py` runs the installed `shapescript` script instead, on purpose.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")


def _shared():
    path = os.environ.get("SHAPESCRIPT_SHARED") or os.path.join(os.path.dirname(ROOT), "shared")
    return path if os.path.isdir(os.path.join(path, "conformance")) else None


SHARED = _shared()
requires_shared = pytest.mark.skipif(
    SHARED is None, reason="the shared contract (../shared, or $SHAPESCRIPT_SHARED) is not beside "
                           "this checkout: its conformance cases and error catalog are not checked")

CLI = [sys.executable, "-m", "shapescript_core.cli"]
CLI_COMMAND = shlex.join(CLI)  # as one string, for tools that take a command (conformance/run.py)


def cli_env(extra=None) -> dict:
    """The environment the CLI runs in: this checkout's packages first on the path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": ROOT + (os.pathsep + path if path else ""), **(extra or {})}


def shapescript(*args, cwd=None, timeout: float = 300, env=None, check: bool = False,
                stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Run the CLI under test with `args` (text output captured); `check`: fail the test,
    showing both streams, unless it exits 0."""
    p = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd or ROOT,
                       timeout=timeout, env=cli_env(env), stdin=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"shapescript {' '.join(map(str, args))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def program(*parts: str) -> str:
    """The path of a program under tests/programs/."""
    return os.path.join(PROGRAMS, *parts)


def read_program(*parts: str) -> str:
    with open(program(*parts), encoding="utf-8") as fh:
        return fh.read()
