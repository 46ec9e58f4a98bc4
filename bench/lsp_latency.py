"""Diagnostics latency of the language server as the user types.

Starts `shapescript-lsp` as a subprocess, opens a generated 10,000-line file (copies of
a llama-like model, `gen.py`), then sends 200 single-character edits inside function
bodies, one at a time. For each it measures the time from sending `didChange` to
receiving the `publishDiagnostics` of that version, and prints p50, p95 and p99.

    .venv/bin/python bench/lsp_latency.py [--lines 10000] [--edits 200] [--profile FILE]

`--profile FILE` runs the server under cProfile and writes its stats there.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from gen import generate  # noqa: E402
sys.path.insert(0, ROOT)
from shapescript_server.stdio_client import StdioClient  # noqa: E402


class Server(StdioClient):
    def __init__(self, cmd: list):
        super().__init__(cmd, cwd=ROOT)

    def wait_publish(self, uri: str, version: int, timeout: float = 60) -> tuple:
        """(arrival time, diagnostics) of the publishDiagnostics for this version;
        answers the server's requests meanwhile."""
        deadline = time.perf_counter() + timeout
        while True:
            t, msg = self.receive(max(0.01, deadline - time.perf_counter()))
            if msg.get("method") == "textDocument/publishDiagnostics":
                p = msg["params"]
                if p["uri"] == uri and p.get("version") == version:
                    return t, p["diagnostics"]
            else:
                self.answer_server_request(msg)


def edit_sites(text: str, count: int) -> list:
    """Offsets of the last digit of `eps=1e-5` literals (inside function bodies), spread
    over the file: toggling it between 5 and 6 keeps the file valid."""
    sites = [m.end() - 1 for m in re.finditer(r"eps=1e-\d\b", text)]
    step = max(1, len(sites) // max(1, count))
    out = sites[::step][:count]
    while out and len(out) < count:  # fewer sites than edits: go round again
        out += out[:count - len(out)]
    return out


def position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return {"line": line, "character": col}  # the generated text is ASCII: UTF-16 = code points


def percentile(xs: list, p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--profile", help="run the server under cProfile, stats to this file")
    args = ap.parse_args(argv)

    text = generate(args.lines)
    missing = args.lines - text.count("\n")
    if missing > 0:  # the generator stops at a whole copy: pad with comments to the exact count
        text += "".join(f"# padding line {k}\n" for k in range(missing))
    offsets = edit_sites(text, args.edits)
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
    cold = srv.wait_publish(uri, 1, timeout=120)[0] - t0

    latencies = []
    errors = 0
    version = 1
    for k, off in enumerate(offsets):
        version += 1
        new = "6" if text[off] != "6" else "5"  # `1e-5` ⇄ `1e-6`: the text stays valid
        text = text[:off] + new + text[off + 1:]
        pos = position(text, off)
        end = {"line": pos["line"], "character": pos["character"] + 1}
        t = srv.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": pos, "end": end}, "text": new}]})
        arrived, diags = srv.wait_publish(uri, version)
        latencies.append((arrived - t) * 1000)
        errors += sum(1 for d in diags if d.get("severity") == 1)
    srv.close()

    print(f"file: {text.count(chr(10))} lines, {len(text)} characters; first check {cold * 1000:.0f} ms")
    print(f"{len(latencies)} single-character edits in function bodies ({errors} errors reported), "
          f"didChange -> publishDiagnostics of that version:")
    print(f"  p50 {percentile(latencies, 50):.1f} ms   p95 {percentile(latencies, 95):.1f} ms   "
          f"p99 {percentile(latencies, 99):.1f} ms   (mean {statistics.mean(latencies):.1f}, "
          f"max {max(latencies):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
