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
    best, best_d = None, None
    limit = max(1, len(name) // 3)
    for c in candidates:
        if c == name:
            continue
        d = distance(name.lower(), c.lower())
        # a one-letter name is as close to every other one-letter name: suggest none
        if d <= limit and d < len(name) and (best_d is None or d < best_d):
            best, best_d = c, d
    return best
