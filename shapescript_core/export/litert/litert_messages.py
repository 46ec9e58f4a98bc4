"""The LiteRT target's messages that are no diagnostic of their own, one constructor each.
Its codes are one module each: e3317.py (the cache length), e3318.py (--split-cache)."""
from __future__ import annotations


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
