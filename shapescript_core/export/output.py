"""What an export may write over: the one output policy, shared by `shapescript export`
and the language server's export command (`check_output`).

An export writes a new output, or, with `force`, replaces an earlier export of ours:
- a directory (`--hf`, `--vllm`) holding our marker file, `.shapescript-export.json`,
  which every export directory gets;
- a file (`--gguf`): a regular file that starts with the GGUF magic.
Anything else is refused with a one-line message, `force` or not: a directory of other
files, a device, a FIFO or a link, the current directory (`-o ''`), `/`, the home
directory, any folder above one of those, a folder holding a source of the program
(imported ones included), a path with control characters.
"""
from __future__ import annotations

import json
import os
import stat

from ..export_errors import ExportError

MARKER = ".shapescript-export.json"
GGUF_MAGIC = b"GGUF"


class OutputExists(ExportError):
    """The output exists and `force` was not given (a usage error)."""


class OutputRefused(ExportError):
    """The output is something an export must not replace."""


def marker_text(target: str, source: str) -> str:
    """The marker file of an export directory: what wrote it."""
    return json.dumps({"format": 1, "written_by": "shapescript export", "target": target,
                       "source": os.path.basename(source)}, indent=2) + "\n"


def is_our_export(path: str, kind: str) -> bool:
    """True when `path` is an earlier export of ours of this kind (links not followed)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if kind == "dir":
        if not stat.S_ISDIR(st.st_mode):
            return False
        try:
            return stat.S_ISREG(os.lstat(os.path.join(path, MARKER)).st_mode)
        except OSError:
            return False
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return os.read(fd, len(GGUF_MAGIC)) == GGUF_MAGIC
    finally:
        os.close(fd)


def _contains(folder: str, path: str) -> bool:
    folder, path = os.path.normpath(folder), os.path.normpath(path)
    try:
        return os.path.commonpath([folder, path]) == folder
    except ValueError:
        return False


def _protected(output: str, sources) -> str:
    """Why `output` may never be an export's output, or ''."""
    real = os.path.realpath(output)
    places = [("the current directory", os.getcwd()), ("your home directory", os.path.expanduser("~"))]
    for what, p in places:
        if p and p != os.sep and (_contains(output, p) or _contains(real, os.path.realpath(p))):
            return f"it is {what}" if os.path.normpath(p) in (output, real) else f"it holds {what}"
    if os.path.dirname(real) == real:
        return "it is the root of the file system"
    for s in sources:
        if _contains(output, s) or _contains(real, os.path.realpath(s)):
            return f"it holds `{os.path.basename(s)}`, a source of the program"
    return ""


def check_output(output: str, kind: str, force: bool, sources=()) -> None:
    """Raise OutputRefused or OutputExists unless an export of `kind` ("dir" or "file")
    may write `output` (absolute): it does not exist, or `force` is given and it is an
    earlier export of ours. `sources`: the program's files (absolute)."""
    output = os.path.normpath(os.path.abspath(output))
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in output):
        raise OutputRefused(f"the output {output!r} has control characters in its name: choose another with -o")
    why = _protected(output, sources)
    if why:
        raise OutputRefused(f"won't write the export to `{output}`: {why}; choose another output with -o")
    if not os.path.lexists(output):
        return
    if not force:
        raise OutputExists(f"`{output}` exists: pass --force to replace it, or choose another output with -o")
    if is_our_export(output, kind):
        return
    what = "an earlier export (a directory holding .shapescript-export.json)" if kind == "dir" \
        else "an earlier GGUF export (a regular file starting with the GGUF magic)"
    raise OutputRefused(f"--force won't replace `{output}`: it is not {what}; "
                        "remove it yourself or choose another output with -o")
