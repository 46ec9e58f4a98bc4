"""The C allocator's settings for a long session (the language server).

Each keystroke's analysis allocates and frees some large blocks (the file's name tables,
the answers carried from the last analysis: tens to hundreds of KB each) between small
blocks that live on (the edited item's tree and check). With glibc's defaults, blocks
above its mmap threshold move to the heap once one is freed (the threshold adapts
upwards), and freed heap memory below a live block is never returned: the resident set
grows by fragments over the first thousand edits, about 15% on the 10,000-line
benchmark file, although the live objects stay the same (`bench/memory.py`). A fixed,
small mmap threshold gives such blocks back when freed, and a small trim threshold
returns the heap's free top: the growth stays under 10%.

Only glibc has `mallopt`; elsewhere this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("shapescript.allocator")

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024
TRIM_THRESHOLD = 64 * 1024


def tune_for_long_sessions() -> bool:
    """Set glibc's mmap and trim thresholds; True if they were set."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    if not ok:
        log.warning("mallopt refused the thresholds: memory may grow by fragments over a long session")
    return ok
