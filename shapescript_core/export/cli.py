"""`shapescript export`'s run: the request from the flags and the settings, the export,
a progress bar (`rich`, on stderr when it is a terminal; plain lines otherwise), and the
closing lines. Exit 0 written, 1 diagnostics or weights errors, 2 usage."""
from __future__ import annotations

import os
import signal
import sys
import time

from .request import RequestError, make_request
from .run import run_export
from .writers import missing_libraries


def run_export_command(ws, path: str, target: str, args, dims: dict, usage_error, print_diags) -> int:
    missing = missing_libraries(target)
    if missing:  # said before anything else: the one line of a plain install
        raise usage_error(missing)
    try:
        request = make_request(path, target, fn=args.fn, output=args.out, weights=args.weights,
                               random_weights=args.random_weights or None, seed=args.seed,
                               dtype=args.dtype, force=args.force, dims=dims, tokenizer=args.tokenizer,
                               prefill_length=args.prefill_length, cache_length=args.cache_length,
                               quantize=args.quantize, split_cache=getattr(args, "split_cache", None),
                               weights_map=getattr(args, "weights_map", None),
                               tensor_parallel=getattr(args, "tensor_parallel", None))
    except RequestError as e:
        raise usage_error(str(e))
    if request.random_weights and request.random_reason:
        print(f"shapescript: {request.random_reason}: exporting random weights (seed {request.seed})",
              file=sys.stderr)
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _terminated)  # a `kill` cleans up as Ctrl-C does
    try:
        with progress_display() as progress:
            result = run_export(ws, request, progress)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if result.diagnostics:
        print_diags(result.diagnostics)
    for w in result.warnings:
        print(f"shapescript: warning: {w}", file=sys.stderr)
    print(f"shapescript: {result.message}", file=sys.stderr)
    return result.status


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


class progress_display:
    """A context manager giving `progress(message, done, total)`."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self._bar = None
        self._task = None
        self._last = None
        self._last_time = 0.0

    def __enter__(self):
        if self.stream.isatty() and os.environ.get("TERM") != "dumb":
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                                           TimeRemainingColumn)
            except ImportError:
                return self.plain
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TimeRemainingColumn(), console=Console(file=self.stream), transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("exporting", total=None)
            return self.rich
        return self.plain

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False

    def rich(self, message: str, done: int, total: int):
        self._bar.update(self._task, description=message, completed=done, total=total if total > 1 else None)

    def plain(self, message: str, done: int, total: int):
        # one line per step, at most a few a second: logs stay readable
        now = time.monotonic()
        if message == self._last or (now - self._last_time < 0.25 and done < total):
            return
        self._last, self._last_time = message, now
        pct = f"{100 * done // total:3d}% " if total > 1 else ""
        print(f"shapescript: {pct}{message}", file=self.stream, flush=True)
