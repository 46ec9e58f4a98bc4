"""Diagnostics latency of the language server as the user types.

Starts `shapescript-lsp` as a subprocess and opens a generated 10,000-line file (copies
of a llama-like model, `gen.py`). Then, measuring from sending `didChange` to receiving
the `publishDiagnostics` of that version:

- cold: didOpen to the first publish;
- an edit mix like real typing (`typing_mix.py`: letters, a digit, brackets, commas,
  operators, `:`, `#`, Enter, a pasted line, a deleted line), each edit followed by its
  undo, one at a time: p50 / p95 / p99 per kind (edit and undo together);
- bursts: 20 keystrokes sent without waiting, with hovers and completions interleaved:
  the time from the last keystroke to the publish of its version, and how many of the
  earlier versions were published anyway.

    .venv/bin/python bench/lsp_latency.py [--lines 10000] [--sites 15] [--bursts 5]
                                          [--kinds letter,paren] [--profile FILE]

`--profile FILE` runs the server under cProfile and writes its stats there. Beside
each kind, the server's CPU time per edit (all its threads, Linux): on a busy machine
wall time stretches with the load, CPU time much less.
Goal: p95 < 50 ms for every kind; a burst's last version within 100 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import typing_mix  # noqa: E402
from gen import generate  # noqa: E402
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the bare client is a test helper
from stdio_client import StdioClient  # noqa: E402


class Server(StdioClient):
    def __init__(self, cmd: list):
        super().__init__(cmd, cwd=ROOT)
        self.seen: list = []  # versions published, in order

    def wait_publish(self, uri: str, version: int, timeout: float = 60) -> tuple:
        """(arrival time, diagnostics) of the publishDiagnostics for this version;
        answers the server's requests (and ignores answers to ours) meanwhile."""
        deadline = time.perf_counter() + timeout
        while True:
            t, msg = self.receive(max(0.01, deadline - time.perf_counter()))
            if msg.get("method") == "textDocument/publishDiagnostics":
                p = msg["params"]
                if p["uri"] == uri:
                    self.seen.append(p.get("version"))
                    if p.get("version") == version:
                        return t, p["diagnostics"]
            else:
                self.answer_server_request(msg)

    def send_request(self, method: str, params) -> None:
        """A request whose answer nobody waits for."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})


def position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return {"line": line, "character": col}  # the generated text is ASCII: UTF-16 = code points


def cpu_ms(pid: int) -> float | None:
    """CPU time the process has used, all threads (Linux schedstat, ns): the server's own
    work, which a busy machine stretches less than wall time."""
    try:
        total = 0
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e6
    except (OSError, ValueError, IndexError):
        return None


def percentile(xs: list, p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def stats(xs: list) -> str:
    return (f"p50 {percentile(xs, 50):6.1f}   p95 {percentile(xs, 95):6.1f}   p99 {percentile(xs, 99):6.1f} ms"
            f"   (max {max(xs):6.1f}, n={len(xs)})")


class Session:
    def __init__(self, srv: Server, uri: str, text: str):
        self.srv, self.uri, self.text, self.version = srv, uri, text, 1
        self.cpu: list = []  # server CPU ms of each timed edit

    def change(self, edit: tuple) -> float:
        """Send one edit; returns the time it was sent."""
        start, end, new = edit
        a, b = position(self.text, start), position(self.text, end)
        self.text = self.text[:start] + new + self.text[end:]
        self.version += 1
        return self.srv.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"range": {"start": a, "end": b}, "text": new}]})

    def timed(self, edit: tuple) -> float:
        """Send one edit and wait for its publish: milliseconds."""
        c0 = cpu_ms(self.srv.proc.pid)
        t = self.change(edit)
        arrived, _ = self.srv.wait_publish(self.uri, self.version)
        c1 = cpu_ms(self.srv.proc.pid)
        if c0 is not None and c1 is not None:
            self.cpu.append(c1 - c0)
        return (arrived - t) * 1000

    def burst(self, edits: list) -> tuple:
        """Send the edits without waiting, a hover and a completion after every fourth:
        (ms from the last edit to its publish, earlier versions published)."""
        first = self.version + 1
        t = 0.0
        c0 = cpu_ms(self.srv.proc.pid)
        for k, e in enumerate(edits):
            t = self.change(e)
            if k % 4 == 3:
                pos = position(self.text, e[0] + len(e[2]))
                doc = {"uri": self.uri}
                self.srv.send_request("textDocument/hover", {"textDocument": doc, "position": pos})
                self.srv.send_request("textDocument/completion", {"textDocument": doc, "position": pos})
        self.srv.seen.clear()
        c_last = cpu_ms(self.srv.proc.pid)
        arrived, _ = self.srv.wait_publish(self.uri, self.version)
        stale = sum(1 for v in self.srv.seen if v is not None and first <= v < self.version)
        c1 = cpu_ms(self.srv.proc.pid)
        if c0 is not None and c1 is not None:
            self.cpu.append((c1 - c0, c1 - c_last))
        return (arrived - t) * 1000, stale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--sites", type=int, default=15, help="sites per kind (each: the edit and its undo)")
    ap.add_argument("--bursts", type=int, default=5)
    ap.add_argument("--kinds", help="comma-separated kinds of typing_mix.KINDS (default: all)")
    ap.add_argument("--profile", help="run the server under cProfile, stats to this file")
    args = ap.parse_args(argv)

    text = generate(args.lines)
    missing = args.lines - text.count("\n")
    if missing > 0:  # the generator stops at a whole copy: pad with comments to the exact count
        text += "".join(f"# padding line {k}\n" for k in range(missing))
    kinds = args.kinds.split(",") if args.kinds else list(typing_mix.KINDS)
    cmd = [sys.executable, "-m", "shapescript_server.main"]
    if args.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", args.profile, "-m", "shapescript_server.main"]
    srv = Server(cmd)
    root = "/tmp/shapescript-bench"
    uri = f"file://{root}/big.ss"
    srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}", "capabilities": {}})
    srv.notify("initialized", {})
    t0 = srv.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "shapescript", "version": 1, "text": text}})
    c0 = cpu_ms(srv.proc.pid)
    cold = srv.wait_publish(uri, 1, timeout=120)[0] - t0
    c1 = cpu_ms(srv.proc.pid)
    cold_cpu = f" (server CPU {c1 - c0:.0f} ms)" if c0 is not None and c1 is not None else ""
    s = Session(srv, uri, text)

    per_kind: dict = {}
    cpu_kind: dict = {}
    for kind in kinds:
        xs = per_kind[kind] = []
        s.cpu = cpu_kind[kind] = []
        for edit in typing_mix.sites(s.text, kind, args.sites):
            undo = typing_mix.apply(s.text, edit)[1]
            xs.append(s.timed(edit))
            xs.append(s.timed(undo))
    bursts, stale = [], 0
    s.cpu = burst_cpu = []
    for k in range(args.bursts):
        edits = typing_mix.typing_burst(s.text, k)
        ms, n = s.burst(edits)
        bursts.append(ms)
        stale += n
        start = edits[0][0]
        s.cpu = []
        s.timed((start, start + len(edits), ""))  # back to the valid file
        s.cpu = burst_cpu
    srv.close()

    print(f"file: {text.count(chr(10))} lines, {len(text)} characters; "
          f"didOpen -> first diagnostics {cold * 1000:.0f} ms{cold_cpu}")
    print("didChange -> publishDiagnostics of that version, by kind of edit (each edit and its undo):")
    for kind, xs in per_kind.items():
        cpu = cpu_kind.get(kind)
        extra = f"   [server CPU p50 {percentile(cpu, 50):5.1f}, p95 {percentile(cpu, 95):5.1f}]" if cpu else ""
        print(f"  {kind:9s} {stats(xs)}{extra}")
    everything = [x for xs in per_kind.values() for x in xs]
    if everything:
        print(f"  {'all':9s} {stats(everything)}   (mean {statistics.mean(everything):.1f})")
    if bursts:
        print(f"bursts of 20 keystrokes with hovers and completions interleaved, last keystroke -> its "
              f"publish: {stats(bursts)}; earlier versions published: {stale} of {19 * len(bursts)}")
        if burst_cpu:
            print(f"  server CPU per burst: p50 {percentile([a for a, _ in burst_cpu], 50):.1f} ms in all "
                  f"(20 keystrokes, 10 requests), {percentile([b for _, b in burst_cpu], 50):.1f} ms after the "
                  f"last keystroke was sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
