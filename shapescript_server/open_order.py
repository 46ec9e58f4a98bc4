"""The open documents not checked since they were opened, checked the most recent first
(diagnostics._check_latest_opened): a restored session opens many at once, and the one
the user looks at is opened, or typed in, last. Touched by the event loop (open, change,
close) and the core thread (take, put back): one lock."""
from __future__ import annotations

import threading
import time

# A burst of opens (a restored session) arrives one message at a time, each decoded on
# the event loop: the core waits until none came for QUIET seconds (at most MOST), so
# it picks the last document of the burst and does not take the loop's CPU meanwhile
QUIET = 0.05
MOST = 1.0


class Unchecked:
    def __init__(self):
        self._lock = threading.Lock()
        self._new: set = set()  # opened, not yet taken for a check
        self._waiting: dict = {}  # uri -> (path, text, version), oldest first
        self._first: dict = {}  # uri -> the text it was opened with, while it waits
        self._added = 0  # how many times one was added: a check under way looks whether one came since
        self._last = float("-inf")  # when (time.monotonic) one was added last

    def opened(self, uri: str):
        """At didOpen, before the document's check is scheduled."""
        with self._lock:
            self._new.add(uri)

    def add(self, uri: str, snapshot: tuple) -> bool:
        """A change (or the open) of a document: True when it waits for its first check,
        now as the most recent, with this text."""
        with self._lock:
            if uri not in self._new:
                return False
            self._first.setdefault(uri, snapshot[1])
            self._waiting.pop(uri, None)
            self._waiting[uri] = snapshot
            self._added += 1
            self._last = time.monotonic()
            return True

    def latest(self):
        """(uri, snapshot, mark, the text it was opened with) of the document added last,
        taken; None when none waits."""
        with self._lock:
            if not self._waiting:
                return None
            uri, snapshot = self._waiting.popitem()
            self._new.discard(uri)
            return uri, snapshot, self._added, self._first.pop(uri, snapshot[1])

    def waiting(self) -> list:
        """The (path, text, version) of each document still waiting."""
        with self._lock:
            return list(self._waiting.values())

    def opened_since(self, mark: int) -> bool:
        return self._added != mark

    def settle(self, quiet: float = QUIET, most: float = MOST):
        """On the core thread: wait while documents keep being opened, until none came
        for `quiet` seconds (at most `most`); at once when none came lately."""
        end = time.monotonic() + most
        while True:
            now = time.monotonic()
            wait = min(self._last + quiet, end) - now
            if wait <= 0:
                return
            time.sleep(wait)

    def put_back(self, uri: str, snapshot: tuple):
        """A check stopped for a newer document: this one waits again, oldest, unless it
        was added again meanwhile."""
        with self._lock:
            if uri in self._waiting:
                return
            self._new.add(uri)
            self._first.setdefault(uri, snapshot[1])  # (its text is the workspace's already)
            self._waiting = {uri: snapshot, **self._waiting}

    def discard(self, uri: str):
        with self._lock:
            self._new.discard(uri)
            self._waiting.pop(uri, None)
            self._first.pop(uri, None)
