"""Atomic output: an export writes into a temporary sibling of its output,
`.NAME.shapescript-tmp-PID-XXXX` (NAME shortened so that it fits NAME_MAX), and renames
it into place when the writer is done. What it may write over is output.py's policy,
checked before anything is written.

- The final rename never replaces what it did not check: a new output is renamed into
  place only if the path is still free (renameat2's RENAME_NOREPLACE; where the system
  lacks it, a hard link for a file, an empty directory claimed with mkdir for a
  directory). Something that appeared there meanwhile (the user's directory, another
  export) stays, and this export fails saying so: of two exports to one path, one wins.
- With `force` over an earlier export of ours, the old one is moved aside, checked
  again (still ours?), the new one renamed in (no-replace), and only then the old one
  removed; a failure before that puts the old one back.
- An exception, Ctrl-C (KeyboardInterrupt), SIGTERM (the CLI turns it into SystemExit),
  a cancel or a full disk removes the temporary before the error goes on: no output,
  no temporary.
- A killed export can't clean up: it leaves only its temporary. The next export to the
  same output removes temporaries whose process is gone (the PID in the name): a
  directory only when it holds our marker (or nothing), a regular file, nothing else.

The rename is atomic for the process (a reader sees the old output or the new one);
data is not fsynced, as `cp` does not: a power loss may lose a fresh export.
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
from contextlib import contextmanager

from ..export_errors import ExportError
from .output import MARKER, OutputExists, OutputRefused, check_output, is_our_export, marker_text  # noqa: F401

MARK = ".shapescript-tmp-"
_IN_FLIGHT: set = set()  # this process's temporaries being written (the server runs exports side by side)
NAME_MAX = 255  # bytes of one file name (Linux, macOS)


def _prefix(output: str) -> tuple:
    """(parent, the temporaries' name prefix): `.NAME.shapescript-tmp-`, NAME cut so that
    prefix + PID + suffix fit NAME_MAX bytes."""
    parent, name = os.path.split(os.path.abspath(output))
    room = NAME_MAX - len(MARK) - 1 - 24  # the dot, "PID-XXXXXXXX" and a margin
    raw = os.fsencode(name)
    if len(raw) > room:
        name = os.fsdecode(raw[:room])  # a cut character stays bytes (surrogateescape)
    return parent, f".{name}{MARK}"


def temp_path(output: str) -> str:
    parent, prefix = _prefix(output)
    return os.path.join(parent, f"{prefix}{os.getpid()}-{os.urandom(4).hex()}")


def temporaries(output: str) -> list:
    parent, prefix = _prefix(output)
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


def _remove_ours(path: str):
    """Remove a temporary or old output of ours: a directory holding our marker (or
    nothing), a regular file; never anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        if os.path.lexists(os.path.join(path, MARKER)):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.rmdir(path)
            except OSError:
                pass
    elif stat.S_ISREG(st.st_mode):
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
        if (pid.isdigit() and _alive(int(pid))) or p in _IN_FLIGHT:
            continue
        _remove_ours(p)
        if not os.path.lexists(p):
            removed.append(p)
    return removed


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def rename_noreplace(src: str, dst: str):
    """Rename `src` to `dst` only if `dst` does not exist: FileExistsError otherwise."""
    if _RENAMEAT2 is not None:
        if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), dst)
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), dst)
    # no renameat2 here: claim the name atomically, then move into it
    if os.path.isdir(src) and not os.path.islink(src):
        os.mkdir(dst)  # FileExistsError when taken
        try:
            os.rename(src, dst)  # onto our empty directory; fails if something was put in it
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise FileExistsError(e.errno, os.strerror(e.errno), dst) from None
            try:
                os.rmdir(dst)
            except OSError:
                pass
            raise
    else:
        os.link(src, dst)  # FileExistsError when taken
        os.unlink(src)


def _appeared(output: str) -> ExportError:
    return OutputRefused(f"`{output}` appeared while this export ran (another export, or made meanwhile): "
                         "it was left as it is, and nothing was written")


@contextmanager
def atomic_output(output: str, kind: str, force: bool = False, sources=(), target: str = "", source: str = ""):
    """Yield the temporary to write (a directory holding our marker for kind "dir", a
    path that does not exist yet for kind "file"); rename it to `output` when the block
    ends normally. `sources`: the program's files, which the output must not hold."""
    output = os.path.normpath(os.path.abspath(output))
    parent = os.path.dirname(output)
    check_output(output, kind, force, sources)
    replacing = os.path.lexists(output)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise ExportError(f"can't create the folder `{parent}`: {e.strerror or e}")
    remove_stale(output)
    tmp = temp_path(output)
    _IN_FLIGHT.add(tmp)
    try:
        if kind == "dir":
            os.mkdir(tmp)
            with open(os.path.join(tmp, MARKER), "x", encoding="utf-8") as fh:
                fh.write(marker_text(target, source))
        yield tmp
        if not os.path.lexists(tmp):
            raise ExportError(f"the writer wrote nothing to `{output}`")
        if replacing:
            _replace(tmp, output, kind)
        else:
            try:
                rename_noreplace(tmp, output)
            except FileExistsError:
                raise _appeared(output) from None
    except BaseException:
        _remove_ours(tmp)
        raise
    finally:
        _IN_FLIGHT.discard(tmp)


def _replace(tmp: str, output: str, kind: str):
    """Move the earlier export aside, check it is still ours, rename the new one in."""
    old = temp_path(output)
    try:
        os.rename(output, old)
    except FileNotFoundError:  # gone meanwhile: nothing to replace
        try:
            rename_noreplace(tmp, output)
        except FileExistsError:
            raise _appeared(output) from None
        return
    if not is_our_export(old, kind):  # replaced by something else since it was checked
        _put_back(old, output)
        raise OutputRefused(f"`{output}` changed while this export ran and is no longer an earlier export: "
                            "it was left as it is, and nothing was written")
    try:
        rename_noreplace(tmp, output)
    except BaseException as e:
        _put_back(old, output)
        if isinstance(e, FileExistsError):
            raise _appeared(output) from None
        raise
    _remove_ours(old)


def _put_back(old: str, output: str):
    try:
        rename_noreplace(old, output)
    except OSError:
        raise ExportError(f"`{output}` appeared while this export ran; the earlier export is kept at `{old}`") from None
