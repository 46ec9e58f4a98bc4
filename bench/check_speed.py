"""Cold check and incremental re-check of a generated 10,000-line file.

Prints lines per second for the cold check (parse and check apart), the time to
re-check after a one-character edit inside one function body through the workspace's
incremental cache, and the same for each kind of edit of `typing_mix.py` (letters,
brackets, commas, operators, `#`, Enter, a pasted line, a deleted line: most leave the
edited function unparseable, as typing does), each edit followed by its undo.
Times are wall clock; CPU time (this thread's) in brackets, which a busy machine
disturbs less.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import typing_mix  # noqa: E402
from gen import body_edit_offsets, generate  # noqa: E402
from shapescript_core.check import sizes  # noqa: E402
from shapescript_core.workspace import Workspace  # noqa: E402


def main():
    text = generate(10_000)
    nlines = text.count("\n")
    path = "/tmp/bench_check_speed.ss"
    # warm the grammar (built once per process) so the cold number is the check itself
    Workspace().set_text("/tmp/warm.ss", "dim D = 1\n")
    colds = []
    for _ in range(3):
        sizes._MEMO.clear()  # nothing carried over from the previous run
        ws = Workspace()
        t0 = time.perf_counter()
        ws.set_text(path, text)
        diags = ws.diagnostics(path)
        colds.append(time.perf_counter() - t0)
    errors = [d for d in diags if d.severity == 1]
    cold = min(colds)
    edits = []
    cur = text
    for k, off in enumerate(body_edit_offsets(text, 50)):
        digit = "6" if k % 2 == 0 else "5"
        cur = cur[:off] + digit + cur[off + 1:]
        t0 = time.perf_counter()
        ws.set_text(path, cur)
        ws.diagnostics(path)
        edits.append(time.perf_counter() - t0)
    inc = statistics.median(edits)
    print(f"file: {nlines} lines, {len(ws.file(path).items)} items, {len(errors)} errors")
    print(f"cold check: {cold * 1000:.0f} ms ({nlines / cold:,.0f} lines/s; best of 3)")
    print(f"re-check after a one-character edit in a function body: median {inc * 1000:.1f} ms, "
          f"max {max(edits) * 1000:.1f} ms over {len(edits)} edits")
    print(f"speed-up: {cold / inc:.0f}x (goal: cold < 1 s, re-check >= 20x faster)")
    t0 = time.perf_counter()
    ws2 = Workspace()
    ws2.set_text(path + "2", text)
    t1 = time.perf_counter()
    ws2.diagnostics(path + "2")
    t2 = time.perf_counter()
    print(f"cold, apart: parse {(t1 - t0) * 1000:.0f} ms, check {(t2 - t1) * 1000:.0f} ms")
    print("re-check after typing, by kind of edit (each edit and its undo), median / p95 / max ms:")
    cur = text
    for kind in typing_mix.KINDS:
        wall, cpu = [], []
        for edit in typing_mix.sites(cur, kind, 15):
            for e in (edit, typing_mix.apply(cur, edit)[1]):
                cur = typing_mix.apply(cur, e)[0]
                t0, c0 = time.perf_counter(), time.thread_time()
                ws.set_text(path, cur)
                ws.diagnostics(path)
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.thread_time() - c0) * 1000)
        wall.sort()
        cpu.sort()
        p95 = lambda xs: xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]  # noqa: E731
        print(f"  {kind:9s} {statistics.median(wall):6.1f} / {p95(wall):6.1f} / {wall[-1]:6.1f}"
              f"   [cpu {statistics.median(cpu):5.1f} / {p95(cpu):5.1f}]")


if __name__ == "__main__":
    main()
