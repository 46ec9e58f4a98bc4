"""A file's parsed items on disk, so that opening it again (a new editor session on the
same project) skips the parse of every item whose text is unchanged.

One cache file per source path, under `$SHAPESCRIPT_CACHE_DIR` (default
`$XDG_CACHE_HOME/shapescript/items`, else `~/.cache/shapescript/items`), named by a
hash of the path and of the parser's own source (grammar, lexer, parser, AST, messages:
a changed parser never reads items an older one made). It holds the items pickled (but
the simple `dim NAME = 123` lines, which parse again as fast as they unpickle);
loading gives `parse_file`'s `reuse` table (text -> items), so an item is reused only
for the very same text, at its new offset. A function whose body the workspace had
dropped (`Workspace.trim`) is not saved: reading a dropped body parses the whole item
again, so its kept header saved nothing and cost more than its parse (on
`bench/workspace_scale.py`, a reopened project took 9 s of CPU to check instead of 7.5,
and 16 MB more resident); it is parsed with the file. Reading is best effort: a missing,
unreadable or foreign file is no cache (logged at debug level), never an error.
Writing goes to a temporary beside the file, renamed over it.

The cache is the user's own (the folder is made private, 0700), and a file is read only
when it and its folder belong to this user and no one else can write them. Loading
goes through an unpickler that builds nothing but the syntax tree's and the
diagnostics' own data classes: a planted file can't run code.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from typing import Optional

from .. import diagnostics as _diagnostics
from . import ast as A

log = logging.getLogger("shapescript.cache")
FORMAT = 1
_PARSER_FILES = ("grammar.lark", "lexer.py", "parser.py", "ast.py", "source.py", os.path.join("..", "diagnostics.py"))
# the code modules, which word the diagnostics the saved items hold: every file in them
_MESSAGE_FOLDERS = ("codes", os.path.join("..", "check", "codes"))
_version: Optional[str] = None


def cache_dir() -> str:
    d = os.environ.get("SHAPESCRIPT_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "shapescript", "items")


def parser_version() -> str:
    """A hash of the parser's source: items made by another parser are not read."""
    global _version
    if _version is None:
        h = hashlib.sha256(str(FORMAT).encode())
        here = os.path.dirname(os.path.abspath(__file__))
        for name in _PARSER_FILES + _message_files(here):
            try:
                with open(os.path.join(here, name), "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(name.encode())
        _version = h.hexdigest()[:16]
    return _version


def _message_files(here: str) -> tuple:
    out = []
    for folder in _MESSAGE_FOLDERS:
        try:
            names = sorted(n for n in os.listdir(os.path.join(here, folder)) if n.endswith(".py"))
        except OSError:
            names = []
        out += [os.path.join(folder, n) for n in names]
    return tuple(out)


def _file_for(path: str) -> str:
    key = hashlib.sha256(f"{parser_version()}\0{path}".encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), key + ".pickle")


_ALLOWED_MODULES = {A.__name__: A, _diagnostics.__name__: _diagnostics}


class _ItemsUnpickler(pickle.Unpickler):
    """Builds only the classes the syntax tree and its diagnostics are made of."""

    def find_class(self, module, name):
        mod = _ALLOWED_MODULES.get(module)
        obj = getattr(mod, name, None) if mod is not None else None
        if not (isinstance(obj, type) and obj.__module__ == module):
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a syntax tree")
        return obj


def private(fd: int, folder: str) -> bool:
    """The file and its folder belong to this user, and no one else can write them."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    for st in (os.fstat(fd), os.stat(folder)):
        if uid is not None and st.st_uid != uid:
            return False
        if st.st_mode & 0o022:
            return False
    return True


def read_private(path: str, read, what: str, level: int = logging.WARNING):
    """`read(fh)` of a cache file opened for reading, when the file and its folder are
    private to this user (`private`); None when it is missing, not private (logged at
    `level`) or `read` fails (logged at debug level): a broken or foreign file is no
    cache. The one reader of the caches' files, as `write_private` is their writer."""
    try:
        with open(path, "rb") as fh:
            if not private(fh.fileno(), os.path.dirname(path)):
                log.log(level, "%s %s not read: it or its folder is not private to this user", what, path)
                return None
            return read(fh)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a broken or foreign file is no cache
        log.debug("%s %s not read: %r", what, path, exc)
        return None


def load(path: str) -> dict:
    """text -> [items] of the last items saved for `path` ({} when there are none)."""
    cache = _file_for(path)
    data = read_private(cache, lambda fh: _ItemsUnpickler(fh).load(), "parse cache")
    if data is None:
        return {}
    if not (isinstance(data, tuple) and len(data) == 3 and data[0] == FORMAT and data[1] == path
            and isinstance(data[2], list) and all(isinstance(it, A.Item) for it in data[2])):
        log.debug("parse cache %s is not this file's", cache)
        return {}
    out: dict = {}
    for it in data[2]:
        out.setdefault(it.text, []).append(it)
    return out


def save(path: str, items: list) -> bool:
    """Write the items of `path`; False (logged) when that can't be done."""
    def write(fh):
        # a simple `dim` is parsed again as fast as it is read back: a file of a
        # million of them keeps (and pickles, with a memo entry per object) none
        # a function whose body the workspace dropped (Workspace.trim) is not kept either:
        # reading its body parses the whole item again, so reusing its header saves
        # nothing, and the unpickled header cost memory and time on top of that parse
        kept = [it for it in items if not it.cheap and getattr(it, "body_loaded", True)]
        # pickling reads each item's __dict__, which makes one (its attributes were held
        # inline): made here, together, before the pickler's temporaries, they don't pin
        # the memory those free afterwards (bench/workspace_scale.py: 12 MB resident)
        for it in kept:
            getattr(it, "__dict__", None)  # (an item of slots has none)
        pickle.dump((FORMAT, path, kept), fh, protocol=pickle.HIGHEST_PROTOCOL)
    return write_private(_file_for(path), write, f"parse cache for {path}", prefix=".items-")


def write_private(path: str, write, what: str, prefix: str = ".tmp-", level: int = logging.WARNING) -> bool:
    """Write a cache file in its private folder (made 0700): `write(fh)` fills a temporary
    file there, which is then renamed over `path`, so a reader never sees half a file.
    False (logged at `level`) when that can't be done. The one writer of the caches' files."""
    folder = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
        return True
    except Exception as exc:
        log.log(level, "%s not written: %r", what, exc)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        return False
