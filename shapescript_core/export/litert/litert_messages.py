"""The LiteRT target's diagnostics (E3317) and messages: one constructor each."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


def e3317(fn: str, cache: int, positions: str, size: int, span) -> Diagnostic:
    return (error("E3317", f"LiteRT's cache holds {cache} positions, but `{fn}` has only {size} "
                           f"(`{positions}` is an index below {size})", span,
                  f"positions beyond {size - 1} would read past the table")
            .note("the KV cache's length is the longest context the .tflite runs; a learned "
                  "position table has no row for a longer one")
            .help(f"pass --cache-length {size} or less (the default is the table's size when it "
                  f"is shorter than 1024)"))


def prefill_too_long(prefill: int, cache: int) -> str:
    return (f"the prefill length {prefill} is longer than the cache length {cache}: "
            f"pass --prefill-length {cache} or less")


def not_a_language_model(fn: str) -> str:
    return f"`{fn}` isn't a language model, so LiteRT-LM can't run it: export it with --hf"


def sliding_window_unsupported(fn: str, window: int) -> str:
    return (f"`{fn}` has sliding-window attention (a window of {window}), but LiteRT-Torch's export_hf runs "
            f"prefill attention as plain causal attention and would drop the window: export it with --hf or "
            f"--vllm")


def conversion_failed(tail: str, log: str) -> str:
    return f"LiteRT-Torch's export_hf failed: {tail} (its output: {log})"
