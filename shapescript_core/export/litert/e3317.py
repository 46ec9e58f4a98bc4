"""E3317: LiteRT's KV cache longer than the model's learned position table. Its check
(`check_cache_length`, run by writer.py before anything is written), the export's
refusal and the diagnostic with its note and help."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error
from ...export_errors import ExportError


def e3317(fn: str, cache: int, positions: str, size: int, span) -> Diagnostic:
    return (error("E3317", f"LiteRT's cache holds {cache} positions, but `{fn}` has only {size} "
                           f"(`{positions}` is an index below {size})", span,
                  f"positions beyond {size - 1} would read past the table")
            .note("the KV cache's length is the longest context the .tflite runs; a learned "
                  "position table has no row for a longer one")
            .help(f"pass --cache-length {size} or less (the default is the table's size when it "
                  f"is shorter than 1024)"))


def check_cache_length(ctx, art, size, o) -> None:
    """Refuse a cache longer than `size`, the position table's rows (None: no table)."""
    lm = art.generator.lm
    if size is not None and o.cache_length > size:
        item = ctx.fn_item
        raise ExportError(f"not exported: the cache length {o.cache_length} is longer than "
                          f"`{item.name}`'s {size} positions",
                          [e3317(item.name, o.cache_length, lm.positions, size, item.span(item.name_pos))])
