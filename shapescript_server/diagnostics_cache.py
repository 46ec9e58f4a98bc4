"""A file's last complete diagnostics on disk, so that opening it again in a new
session shows them at once, before the file is even parsed (the check still runs, and
its diagnostics replace these only when they differ).

One JSON file per source path, beside the parsed items (parse_cache.py: the same
folder, `$SHAPESCRIPT_CACHE_DIR` or `~/.cache/shapescript/items`, the same rule that a
file is read only when it and its folder are private to this user), named by a hash of
the path and of the checker's own files (their names, sizes and modification times: a
changed checker never shows diagnostics an older one made). An entry holds the
diagnostics as published (LSP JSON) and what they were made from:

- the hash of the file's text (newlines normalised, as the workspace holds it);
- the hash of the text of every file of its import closure, or why one could not be
  read (missing, outside the workspace, too large...): an edit anywhere in an import,
  even inside a body, invalidates the entry (stricter than the checker's own early
  cutoff, and cheap to verify: no parse);
- the settings the check depends on (dims, default targets, tensor parallel ranks, the
  workspace folders, the size limit, where the docs pages live).

An entry is used only when all of these are equal now. JSON, not pickle: reading a
planted file builds nothing but lists, dicts and strings, and an entry of the wrong
shape is no entry. Bounded: an entry over MAX_BYTES is neither written nor read, and
the folder keeps at most MAX_ENTRIES entries (the least recently written go first).
Reading and writing are best effort: a failure is logged, never raised.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Callable, Iterable, Optional

from shapescript_core.diagnostics import docs_base
from shapescript_core.files import Access, ReadRefused, read_bytes
from shapescript_core.syntax import parse_cache
from shapescript_core.syntax.source import decode_source, normalize_newlines

log = logging.getLogger("shapescript.cache")

FORMAT = 1
SUFFIX = ".diags.json"
MAX_BYTES = 4 << 20  # one file's entry
MAX_ENTRIES = 512  # entries kept in the folder
_HERE = os.path.dirname(os.path.abspath(__file__))
_CORE = os.path.join(os.path.dirname(_HERE), "shapescript_core")
_OWN_FILES = ("convert.py", "diagnostics_json.py", "diagnostics_cache.py")  # the server's part of what is published
_version: Optional[str] = None


def checker_version() -> str:
    """A hash of the names, sizes and modification times of the core's source files and
    the server's conversion: diagnostics made by other code are not shown."""
    global _version
    if _version is None:
        h = hashlib.sha256(str(FORMAT).encode())
        paths = [os.path.join(_HERE, n) for n in _OWN_FILES]
        for folder, dirs, files in os.walk(_CORE):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [os.path.join(folder, n) for n in sorted(files) if n.endswith((".py", ".lark"))]
        for p in paths:
            try:
                st = os.stat(p)
                h.update(f"{os.path.relpath(p, _CORE)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            except OSError:
                h.update(p.encode())
        _version = h.hexdigest()[:16]
    return _version


def text_hash(text: Optional[str]) -> Optional[str]:
    """The hash an entry keeps of a text (None: the file could not be read)."""
    if text is None:
        return None
    return hashlib.sha256(normalize_newlines(text).encode("utf-8", "surrogatepass")).hexdigest()


def unread(kind: Optional[str]) -> str:
    """What an entry keeps of an import that could not be read: why (missing, outside
    the workspace, too large...), as the workspace's refusal says."""
    return f"unread:{kind}"


def fingerprint(config, roots: list, access: Access) -> str:
    """The settings a check depends on (shapescript_core.settings.Config, the workspace
    folders, the reading boundary), as one comparable string."""
    return json.dumps({
        "dims": dict(config.dims), "targets": sorted(config.default_targets) if config.default_targets else None,
        "ranks": config.export.get("tensor_parallel", 1), "roots": list(roots),
        "access": [access.limit, list(access.roots or ())], "docs": docs_base()}, sort_keys=True, default=repr)


def _file_for(path: str) -> str:
    key = hashlib.sha256(f"{checker_version()}\0{path}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(parse_cache.cache_dir(), key + SUFFIX)


def _valid(data, path: str) -> bool:
    if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("path") == path
            and isinstance(data.get("text"), str) and isinstance(data.get("settings"), str)
            and isinstance(data.get("deps"), list) and isinstance(data.get("diagnostics"), list)):
        return False
    for dep in data["deps"]:
        if not (isinstance(dep, list) and len(dep) == 2 and isinstance(dep[0], str)
                and (dep[1] is None or isinstance(dep[1], str))):
            return False
    for d in data["diagnostics"]:
        if not (isinstance(d, dict) and isinstance(d.get("message"), str) and isinstance(d.get("range"), dict)):
            return False
    return True


def load(path: str, text: str, settings: str, dep_hash: Callable[[str], Optional[str]]) -> Optional[list]:
    """The diagnostics kept for `path` if they were made from this very text, these
    settings and imports whose texts `dep_hash` (path -> hash now) finds unchanged;
    else None."""
    cache = _file_for(path)
    raw = parse_cache.read_private(cache, lambda fh: fh.read(MAX_BYTES + 1), "diagnostics cache")
    data = None
    if raw is not None and len(raw) > MAX_BYTES:
        log.debug("diagnostics cache %s not read: larger than %d bytes", cache, MAX_BYTES)
    elif raw is not None:
        try:
            data = json.loads(raw)
        except ValueError as exc:  # a broken file is no cache
            log.debug("diagnostics cache %s not read: %r", cache, exc)
    if not _valid(data, path):
        log.debug("diagnostics cache %s is not this file's", cache)
        return None
    if data["text"] != text_hash(text) or data["settings"] != settings:
        return None
    for dep, h in data["deps"]:
        if dep_hash(dep) != h:
            return None
    return data["diagnostics"]


def kept(path: str, text: str, settings: str, open_texts: dict, access: Access,
         version_of: Callable[[str], Optional[int]]) -> Optional[list]:
    """`load` with the imports' texts as the server sees them: an open document's
    (`open_texts`: path -> text), else the file's on disk as the workspace would read
    it (`access`), else none. A fix's edits were made on these very texts: their
    `versions` become the documents' versions now (`version_of`: uri -> version)."""
    def digest(dep: str) -> Optional[str]:
        if dep in open_texts:
            return text_hash(open_texts[dep])
        try:
            return text_hash(decode_source(read_bytes(dep, access))[0])
        except ReadRefused as e:
            return unread(e.refusal.kind)

    items = load(path, text, settings, digest)
    for d in items or ():
        data = d.get("data")
        for fix in (data.get("fixes") if isinstance(data, dict) else None) or ():
            if isinstance(fix, dict) and isinstance(fix.get("versions"), dict):
                fix["versions"] = {u: version_of(u) for u in fix["versions"]}
    return items


def save(path: str, text_digest: str, settings: str, deps: Iterable, diagnostics: list) -> bool:
    """Keep the complete diagnostics of `path` (its text's hash `text_digest`, the
    import closure's [(path, hash)]); False (logged) when that can't be done."""
    what = f"diagnostics cache for {path}"
    try:
        body = json.dumps({"format": FORMAT, "path": path, "text": text_digest, "settings": settings,
                           "deps": [[p, h] for p, h in deps], "diagnostics": diagnostics},
                          separators=(",", ":")).encode("utf-8", "surrogatepass")
    except Exception as exc:
        log.warning("%s not written: %r", what, exc)
        return False
    if len(body) > MAX_BYTES:
        log.debug("%s not written: %d bytes", what, len(body))
        return False
    cache = _file_for(path)
    if not parse_cache.write_private(cache, lambda fh: fh.write(body), what, prefix=".diags-"):
        return False
    try:
        prune(os.path.dirname(cache), SUFFIX, MAX_ENTRIES)
    except Exception as exc:
        log.warning("%s: the old entries not pruned: %r", what, exc)
    return True


def prune(folder: str, suffix: str, most: int):
    """At most `most` files named `*suffix` in the folder: the least recently written go."""
    with os.scandir(folder) as it:
        entries = [e for e in it if e.name.endswith(suffix) and e.is_file(follow_symlinks=False)]
    if len(entries) <= most:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
    for e in entries[:len(entries) - most]:
        try:
            os.unlink(e.path)
        except OSError as exc:
            log.debug("cache file %s not removed: %r", e.path, exc)
