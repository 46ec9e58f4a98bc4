"""Giving the memory a large job freed back to the system.

Saving a file's parsed items (parse_cache.py) pickles hundreds of thousands of objects;
the pickler's tables are freed afterwards, but glibc's allocator keeps the pages, so the
server's resident set stays about 30 MB higher after a large workspace is opened
(`bench/workspace_scale.py`). `release()` asks glibc to hand free pages back
(malloc_trim); elsewhere (macOS, musl) it does nothing."""
from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("shapescript.server")

_trim = None  # glibc's malloc_trim, once looked up; False where there is none


def release() -> bool:
    """Return the C heap's free pages to the system; whether it could be asked."""
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            try:
                _trim = ctypes.CDLL("libc.so.6").malloc_trim
                _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError) as exc:
                log.info("malloc_trim is not available: %r", exc)
    if not _trim:
        return False
    _trim(0)
    return True
