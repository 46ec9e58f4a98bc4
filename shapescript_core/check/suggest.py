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


def distance_within(a: str, b: str, bound: int) -> int:
    """The edit distance of `a` and `b` when it is at most `bound`, else `bound + 1`.

    Only the cells of the band |i - j| <= bound can hold a distance within the bound, and
    once a whole row exceeds it no later row can come back under: an unknown name among
    the thousands of names of a large workspace costs a few cells per candidate, not the
    full table (the answer is the same as `distance`'s)."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    over = bound + 1
    n = len(b)
    prev = [j if j <= bound else over for j in range(n + 1)]
    for i, ca in enumerate(a, 1):
        lo, hi = max(1, i - bound), min(n, i + bound)
        cur = [over] * (n + 1)
        if i <= bound:
            cur[0] = i
        best = cur[0]
        for j in range(lo, hi + 1):
            v = prev[j - 1] + (ca != b[j - 1])
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            if v > over:
                v = over
            cur[j] = v
            if v < best:
                best = v
        if best > bound:
            return over
        prev = cur
    return min(prev[n], over)


def closest(name: str, candidates) -> str | None:
    """The known name most like `name`, or None when none is close enough.

    Ties are broken by a fixed rule, never by the order of the candidates (which may
    come from a set, whose order changes from run to run): the smallest edit distance
    ignoring case, then the smallest one with case, then the nearest length, then the
    name itself in code-point order. So the CLI and the server always agree.
    """
    limit = max(1, len(name) // 3)
    # a one-letter name is as close to every other one-letter name: suggest none
    bound = min(limit, len(name) - 1)
    if bound < 0:
        return None
    low = name.lower()
    size = len(low)
    chars = set(low)
    best, best_key = None, None
    for c in candidates:
        if c == name:
            continue
        cl = c.lower()
        if abs(len(cl) - size) > bound:  # the distance is at least the difference in length
            continue
        # and at least the number of letters one name has and the other lacks: each takes
        # an edit of its own (a cheap test that rules out most names of a large workspace)
        theirs = set(cl)
        if len(chars - theirs) > bound or len(theirs - chars) > bound:
            continue
        d = distance_within(low, cl, bound)
        if d > bound:
            continue
        key = (d, distance(name, c), abs(len(c) - len(name)), c)
        if best_key is None or key < best_key:
            best, best_key = c, key
    return best
