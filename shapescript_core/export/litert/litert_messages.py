"""The LiteRT target's diagnostics (E3317, E3318) and messages: one constructor each."""
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


def e3318(fn: str, reason: str, span) -> Diagnostic:
    return (error("E3318", f"LiteRT's split cache needs `{fn}`'s rotary positions as one table, "
                           f"but {reason}", span, "its rotary positions are not one table")
            .note("--split-cache moves the rotary table out of the model: LiteRT-Torch computes it "
                  "in a RoPE signature of its own (auxiliary.tflite) from `config.rope_parameters` "
                  "and the model's `rotary_emb`, and feeds it to every attention")
            .help("rotate the queries and keys by the positions parameter itself, with one theta "
                  "and one style over the whole head; or export without --split-cache"))


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
