"""Closest-name suggestions for unknown names (edit distance)."""
from __future__ import annotations


def distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def closest(name: str, candidates) -> str | None:
    """The known name most like `name`, or None when none is close enough.

    Ties are broken by a fixed rule, never by the order of the candidates (which may
    come from a set, whose order changes from run to run): the smallest edit distance
    ignoring case, then the smallest one with case, then the nearest length, then the
    name itself in code-point order. So the CLI and the server always agree.
    """
    limit = max(1, len(name) // 3)
    low = name.lower()
    best, best_key = None, None
    for c in candidates:
        if c == name:
            continue
        d = distance(low, c.lower())
        # a one-letter name is as close to every other one-letter name: suggest none
        if d > limit or d >= len(name):
            continue
        key = (d, distance(name, c), abs(len(c) - len(name)), c)
        if best_key is None or key < best_key:
            best, best_key = c, key
    return best
