"""Checking time against the size of a type: functions whose tensors have N axes.

For N = 100, 200, 400 and 800 axes, prints the time to check each program (the best of
5 cold checks, grammar already built: the machine is shared, the best is the steadiest) and the growth factor from N/2 to N: about 2 is
linear, 4 quadratic, 8 cubic. Nothing in the checker should grow faster than n log n in
the size of a type (issue 10: the return-type check was cubic, 400 axes took 20 s).
On a busy machine the times wobble; the Python function calls of one check (counted by
cProfile) grow the same way and don't, so each line ends with their growth too.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from shapescript_core.workspace import Workspace  # noqa: E402


def programs(n: int) -> dict:
    axes = " ".join(f"a{i}" for i in range(n))
    half = " ".join(f"a{i}" for i in range(0, n, 2))
    rev = " ".join(f"a{i}" for i in reversed(range(n)))
    dims = "".join(f"dim a{i} = {i % 7 + 1}\n" for i in range(n))
    return {
        "return of a generic type": f"fn f(x: [{axes}]) -> [{axes}]:\n    return x\n",
        "return, one axis renamed": f"fn f(x: [{axes}]) -> [{axes} q]:\n    return x\n",
        "call binding every axis": (f"fn g(x: [{axes}]) -> [{axes}]:\n    return x\n"
                                    f"fn f(x: [{axes}]) -> [{axes}]:\n    return g(x)\n"),
        "elementwise by name": f"fn f(x: [{axes}], y: [{half}]) -> [{axes}]:\n    return x + y\n",
        "rearrange reversing": f"fn f(x: [{axes}]) -> [{rev}]:\n    return x |> rearrange({axes} -> {rev})\n",
        "softmax over the last": f"fn f(x: [{axes}]) -> [{axes}]:\n    return softmax(x, over=a{n - 1})\n",
        "dims with values": dims + f"fn f(x: [{axes}]) -> [{axes}]:\n    return x * 2.0\n",
    }


def time_check(src: str) -> float:
    runs = []
    for _ in range(5):
        ws = Workspace()
        t0 = time.perf_counter()
        ws.set_text("/tmp/bench_big_types.ss", src)
        ws.diagnostics("/tmp/bench_big_types.ss")
        runs.append(time.perf_counter() - t0)
    return min(runs)


def count_calls(src: str) -> int:
    import cProfile
    import pstats
    ws = Workspace()
    ws.set_text("/tmp/bench_big_types.ss", src)
    prof = cProfile.Profile()
    prof.enable()
    ws.diagnostics("/tmp/bench_big_types.ss")
    prof.disable()
    return pstats.Stats(prof).total_calls


def main():
    Workspace().set_text("/tmp/warm.ss", "dim D = 1\n")  # build the grammar once
    sizes = (100, 200, 400, 800)
    table = {n: programs(n) for n in sizes}
    for name in table[sizes[0]]:
        times = [time_check(table[n][name]) for n in sizes]
        growth = times[-1] / times[-2] if times[-2] > 0 else float("nan")
        calls = [count_calls(table[n][name]) for n in sizes[-2:]]
        cells = "  ".join(f"N={n}: {t * 1000:7.1f} ms" for n, t in zip(sizes, times))
        print(f"{name:26s} {cells}  growth x{growth:.1f} (calls x{calls[1] / calls[0]:.2f})")


if __name__ == "__main__":
    main()
