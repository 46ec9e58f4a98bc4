"""The server gives the memory a large job freed back to the system (memory.py)."""
import platform
import sys

import pytest

from shapescript_server import memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def rss_kb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system():
    # 128 MiB in 64 KiB blocks (below glibc's mmap threshold: on the heap), all freed but
    # the last, which keeps the heap's top where it is: only a trim returns the pages
    blocks = [bytearray(b"x" * 65536) for _ in range(2048)]
    keep = blocks[-1]
    del blocks
    before = rss_kb()
    assert memory.release() is True
    assert before - rss_kb() > 64 * 1024
    assert keep[0] == ord("x")


@pytest.mark.skipif(GLIBC, reason="elsewhere there is nothing to ask")
def test_without_glibc_release_does_nothing():
    assert memory.release() is False
