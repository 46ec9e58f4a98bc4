"""Atomic output: an export writes into a temporary sibling of its output,
`.NAME.shapescript-tmp-PID-XXXX`, and renames it into place when the writer is done.

- An existing output is refused unless `force`; with `force` the old output is moved
  aside, the new one renamed in, and the old one removed, so a failure before the
  rename keeps the old output whole.
- An exception, Ctrl-C (KeyboardInterrupt), SIGTERM (the CLI turns it into SystemExit),
  a cancel or a full disk removes the temporary before the error goes on: no output,
  no temporary.
- A killed export can't clean up: it leaves only its temporary. The next export to the
  same output removes temporaries whose process is gone (the PID in the name), and
  leaves those of an export still running.

The rename is atomic for the process (a reader sees the old output or the new one);
data is not fsynced, as `cp` does not: a power loss may lose a fresh export.
"""
from __future__ import annotations

import os
import secrets
import shutil
from contextlib import contextmanager

from .errors import ExportError

MARK = ".shapescript-tmp-"


class OutputExists(ExportError):
    """The output exists and `force` was not given (a usage error)."""


def temp_path(output: str) -> str:
    parent, name = os.path.split(os.path.abspath(output))
    return os.path.join(parent, f".{name}{MARK}{os.getpid()}-{secrets.token_hex(4)}")


def temporaries(output: str) -> list:
    parent, name = os.path.split(os.path.abspath(output))
    prefix = f".{name}{MARK}"
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [os.path.join(parent, n) for n in sorted(names) if n.startswith(prefix)]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours from an earlier export in this process: not in flight now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: str):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def remove_stale(output: str) -> list:
    """Remove the temporaries of exports to `output` whose process is gone; the removed."""
    removed = []
    for p in temporaries(output):
        tail = os.path.basename(p).rsplit(MARK, 1)[1]
        pid = tail.split("-", 1)[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        _remove(p)
        removed.append(p)
    return removed


@contextmanager
def atomic_output(output: str, kind: str, force: bool = False):
    """Yield the temporary to write (an empty directory for kind "dir", a path that does
    not exist yet for kind "file"); rename it to `output` when the block ends normally."""
    output = os.path.abspath(output)
    parent = os.path.dirname(output)
    if os.path.lexists(output) and not force:
        raise OutputExists(f"`{output}` exists: pass --force to replace it, or choose another output with -o")
    if os.path.lexists(output) and kind == "dir" and not os.path.isdir(output):
        raise OutputExists(f"`{output}` exists and is not a directory: remove it or choose another output with -o")
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise ExportError(f"can't create the folder `{parent}`: {e.strerror or e}")
    remove_stale(output)
    tmp = temp_path(output)
    try:
        if kind == "dir":
            os.mkdir(tmp)
        yield tmp
        if not os.path.lexists(tmp):
            raise ExportError(f"the writer wrote nothing to `{output}`")
        if os.path.lexists(output):
            old = temp_path(output)
            os.rename(output, old)
            try:
                os.rename(tmp, output)
            except BaseException:
                os.rename(old, output)
                raise
            _remove(old)
        else:
            os.rename(tmp, output)
    except BaseException:
        _remove(tmp)
        raise
