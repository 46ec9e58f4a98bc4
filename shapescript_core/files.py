"""Reading files safely: every file the CLI and the language server read goes through
`read_bytes` (sources, imports, `shapescript.toml`, the weights' headers through
`open_regular`), and every folder they search through `walk_files`.

The rules, in one place (docs/security.md, "Reading files"):
- only a regular file is read: the path is checked with `stat` before it is opened, and
  the opened descriptor with `fstat` (so a file swapped for a FIFO in between is caught);
  it is opened with O_NONBLOCK, so a FIFO or a device never blocks the reader;
- at most `Access.limit` bytes are read (default 16 MiB, `[limits] max_file_size`
  in shapescript.toml or the editor's settings): a longer file is refused, not cut;
- with `Access.roots` set (the language server: its workspace folders), a path whose
  real path (symlinks resolved) is outside every root is refused before anything is
  opened, and the real path is what gets opened;
- a path holding a NUL or text the file system can't encode is refused.
A refusal is a `ReadRefused` carrying a `Refusal` (what and why, in plain words), which
the callers turn into E0214 at an import, a usage error in the CLI, or an LSP error
answer; `kind == "missing"` is a file that isn't there (E0210 at an import).

`walk_files` lists the files of a folder tree without following a symlink out of it,
skipping special files, hidden folders and the usual dependency folders, and stops
after `max_entries` directory entries or `seconds` (a root of `/` ends quickly).
"""
from __future__ import annotations

import errno
import logging
import math
import os
import stat
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

log = logging.getLogger("shapescript.files")

MiB = 1024 * 1024
DEFAULT_FILE_LIMIT = 32 * MiB          # sources, imports, settings (a 20 MB program of a million dims is read)
WALK_MAX_ENTRIES = 50_000              # directory entries one walk looks at
WALK_SECONDS = 2.0                     # ... and its time, the caller's work between files included
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": MiB, "mb": 1000 ** 2, "mib": MiB,
          "g": 1024 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3, "t": 1024 ** 4, "tb": 1000 ** 4, "tib": 1024 ** 4,
          "p": 1024 ** 5, "pb": 1000 ** 5, "pib": 1024 ** 5}


@dataclass(frozen=True)
class Refusal:
    """Why a file is not read: `kind` is missing, directory, special, too_large, outside,
    bad_path or unreadable; `reason` says it in words ("it is a FIFO, not a regular file")."""
    path: str
    kind: str
    reason: str


class ReadRefused(Exception):
    def __init__(self, refusal: Refusal):
        super().__init__(f"can't read `{shown(refusal.path)}`: {refusal.reason}")
        self.refusal = refusal


@dataclass(frozen=True)
class Access:
    """What may be read: at most `limit` bytes per file, and with `roots` (absolute real
    paths) only files inside one of them. `roots=None`: anywhere (the CLI reads what its
    user names)."""
    limit: int = DEFAULT_FILE_LIMIT
    roots: Optional[tuple] = None

    @staticmethod
    def within(roots: Iterable[str], limit: int = DEFAULT_FILE_LIMIT) -> "Access":
        return Access(limit, tuple(dict.fromkeys(os.path.realpath(r) for r in roots if usable_path(r))))

    def outside(self, real: str) -> bool:
        return self.roots is not None and not any(inside(real, r) for r in self.roots)


def inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or under it (both absolute, normalised)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def shown(path: str) -> str:
    """A path as messages show it: a NUL or a lone surrogate escaped, never raw."""
    return path.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def usable_path(path) -> bool:
    """A str path the file system can take: no NUL, encodable (no lone surrogate)."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return False
    try:
        os.fsencode(path)
    except UnicodeError:
        return False
    return True


def human_size(n: int) -> str:
    """`16 MiB`, `1.5 GiB`, `512 bytes`, `about 10^24 bytes`: a size for messages (any
    integer, however large: no float overflow, no long decimal string)."""
    if n < 1024:
        return f"{n} byte{'s' if n != 1 else ''}"
    if n >= 1024 ** 7:
        return f"about 10^{int(math.log10(n))} bytes"
    k = 0
    while n >= 1024 ** (k + 1) and k < 6:
        k += 1
    x = n / 1024 ** k
    unit = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")[k]
    return (f"{x:.1f}".rstrip("0").rstrip(".") if x < 100 else f"{x:.0f}") + f" {unit}"


def parse_size(value) -> Optional[int]:
    """A size setting: an integer of bytes, or a string like "16 MiB", "2GB", "512k";
    None when it is not one (or not positive)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    s = value.strip().lower().replace("_", "")
    num = s.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = s[len(num):].strip()
    if unit not in _UNITS or not num or len(num) > 30:
        return None
    try:
        n = float(num) if "." in num else int(num)
    except ValueError:
        return None
    out = int(n * _UNITS[unit])
    return out if out > 0 else None


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _special(path: str, mode: int) -> Refusal:
    what = _kind_of(mode)
    return Refusal(path, "directory" if stat.S_ISDIR(mode) else "special", f"it is {what}, not a regular file")


def _os_refusal(path: str, e: OSError) -> Refusal:
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return Refusal(path, "missing", "no such file")
    if e.errno == errno.EISDIR:
        return Refusal(path, "directory", "it is a directory, not a regular file")
    return Refusal(path, "unreadable", (e.strerror or str(e)).lower())


def check_path(path: str, access: Access = Access()) -> tuple[str, Optional[Refusal]]:
    """(the path to open, None) or (path, why not): the checks made before any open."""
    if not usable_path(path):
        what = "a NUL character" if isinstance(path, str) and "\x00" in path else "characters no file name can hold"
        return path, Refusal(path, "bad_path", f"the path holds {what}")
    if access.roots is None:
        return path, None
    real = os.path.realpath(path)
    if access.outside(real):
        if not access.roots:
            return path, Refusal(path, "outside", "no workspace folder is open, nor any document beside it")
        where = "the workspace folder" if len(access.roots) == 1 else "the workspace folders"
        return path, Refusal(path, "outside", f"it is outside {where} (`{access.roots[0]}`"
                                             + (f" and {len(access.roots) - 1} more)" if len(access.roots) > 1 else ")"))
    return real, None


def open_regular(path: str, access: Access = Access()) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking: (descriptor, its fstat).
    Raises ReadRefused (the size limit is the caller's: see `read_bytes`)."""
    target, refusal = check_path(path, access)
    if refusal is not None:
        raise ReadRefused(refusal)
    try:
        st = os.stat(target)
    except OSError as e:
        raise ReadRefused(_os_refusal(path, e)) from None
    if not stat.S_ISREG(st.st_mode):  # never open a device or a FIFO: opening one can act
        raise ReadRefused(_special(path, st.st_mode))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError as e:
        raise ReadRefused(_os_refusal(path, e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            raise ReadRefused(_special(path, st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def outside_problem(path: str, access: Access, what: str) -> Optional[str]:
    """Why the server may not read or write `path` (`what`: "the output", "the weights"):
    it is outside the roots, its real path (symlinks resolved, a path not there yet by
    its nearest existing folder) considered; or None."""
    if access.roots is None:
        return None
    if not usable_path(path):
        return f"{what} `{shown(path)}` holds a NUL or characters no file name can hold"
    real = os.path.realpath(path)
    if access.outside(real):
        where = "the workspace folder" if len(access.roots) == 1 else "the workspace folders"
        return f"{what} `{shown(path)}` is outside {where}: the editor reads and writes only inside it"
    return None


def too_large(path: str, size_said: str, limit: int) -> Refusal:
    return Refusal(path, "too_large", f"it is {size_said}, over the limit of {human_size(limit)} "
                                      f"(`max_file_size` in shapescript.toml's [limits])")


def read_bytes(path: str, access: Access = Access()) -> bytes:
    """The whole content of a regular file of at most `access.limit` bytes, or ReadRefused."""
    fd, st = open_regular(path, access)
    limit = access.limit
    try:
        if st.st_size > limit:
            raise ReadRefused(too_large(path, human_size(st.st_size), limit))
        chunks, got = [], 0
        while got <= limit:  # files whose size stat doesn't tell (/proc) stop here too
            try:
                b = os.read(fd, min(limit + 1 - got, 1 << 20))
            except BlockingIOError:  # not for a regular file; never wait for one
                raise ReadRefused(Refusal(path, "unreadable", "it can't be read without waiting")) from None
            except OSError as e:
                raise ReadRefused(_os_refusal(path, e)) from None
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got > limit:
            raise ReadRefused(too_large(path, f"over {human_size(limit)}", limit))
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_file(path: str, access: Access = Access()):
    """A binary file object on a regular file (no size limit: weights are large and read
    in parts); ReadRefused like `read_bytes`."""
    fd, _ = open_regular(path, access)
    try:
        os.set_blocking(fd, True)  # a regular file: plain reads from here
    except OSError:
        pass
    return os.fdopen(fd, "rb")


def skipped_folder(name: str) -> bool:
    """A folder no search enters: hidden (`.git`, `.venv`) or a dependency folder."""
    return name.startswith(".") or name in SKIPPED_DIRS


def walk_files(roots: Iterable[str], suffix: str, max_entries: Optional[int] = WALK_MAX_ENTRIES,
               seconds: Optional[float] = WALK_SECONDS, access: Optional[Access] = None,
               excluded=None) -> Iterator[str]:
    """The regular files named `*suffix` under `roots`, in a stable order: hidden and
    dependency folders skipped, symlinked folders not entered, a symlinked file only if it
    resolves to a regular file inside a root, and what `excluded(path, is_folder)` says
    (the `exclude` of shapescript.toml, for `shapescript check`); at most `max_entries`
    entries looked at, for at most `seconds` (the consumer's time between files counts),
    then it stops and logs why (None: no bound, for a command the user asked for)."""
    real_roots = tuple(os.path.realpath(r) for r in roots if usable_path(r))
    access = access or Access(DEFAULT_FILE_LIMIT, real_roots)
    if max_entries is None:
        max_entries = math.inf
    deadline = time.monotonic() + (math.inf if seconds is None else seconds)
    seen = 0
    for root in real_roots:
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = []
                    for e in it:
                        seen += 1
                        if seen > max_entries or time.monotonic() > deadline:
                            log.warning("stopped looking for %s files after %d entries and %.1f s (under %s)",
                                        suffix, seen - 1, seconds - (deadline - time.monotonic()), root)
                            return
                        entries.append(e)
            except OSError as e:
                log.debug("can't list %s: %s", folder, e)
                continue
            entries.sort(key=lambda e: e.name)
            subdirs = []
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if not skipped_folder(e.name) and not (excluded and excluded(e.path, True)):
                            subdirs.append(e.path)
                        continue
                    if not e.name.endswith(suffix) or (excluded and excluded(e.path, False)):
                        continue
                    if e.is_symlink():
                        real = os.path.realpath(e.path)
                        if access.outside(real) or not stat.S_ISREG(os.stat(real).st_mode):
                            continue
                    elif not e.is_file(follow_symlinks=False):
                        continue  # a FIFO, a socket, a device named *.ss
                except OSError:
                    continue
                yield e.path
                if time.monotonic() > deadline:
                    log.warning("stopped looking for %s files after %.1f s (under %s)", suffix, seconds, root)
                    return
            stack.extend(reversed(subdirs))
