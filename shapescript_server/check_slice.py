"""How long a file's first check goes on after an early publish before a newer keystroke
stops it (Analyzer._early): typing that never pauses still gets the rest checked, a
slice per keystroke, so the first request that needs the whole file (a hover) doesn't
find it all left to do. Free of pygls: fast_start.py uses it too."""
from __future__ import annotations

import time

SLICE = 0.025  # seconds of the rest of the check after each early publish


class AfterEarly:
    """`stop()` (a newer keystroke came), asked only once SLICE seconds have passed since
    the last early publish (`published()`); at once when none was made."""

    def __init__(self, stop):
        self.stop = stop
        self.until = 0.0

    def published(self):
        self.until = time.monotonic() + SLICE

    def __call__(self) -> bool:
        return time.monotonic() >= self.until and self.stop()
