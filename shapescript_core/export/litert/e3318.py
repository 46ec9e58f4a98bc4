"""E3318: --split-cache without one rotary table. Its check (`check_split_cache`, run by
writer.py for --split-cache), the export's refusal and the diagnostic with its note and
help."""
from __future__ import annotations

from ...compile.rotary_plan import Rotary
from ...diagnostics import Diagnostic, error
from ...export_errors import ExportError


def e3318(fn: str, reason: str, span) -> Diagnostic:
    return (error("E3318", f"LiteRT's split cache needs `{fn}`'s rotary positions as one table, "
                           f"but {reason}", span, "its rotary positions are not one table")
            .note("--split-cache moves the rotary table out of the model: LiteRT-Torch computes it "
                  "in a RoPE signature of its own (auxiliary.tflite) from `config.rope_parameters` "
                  "and the model's `rotary_emb`, and feeds it to every attention")
            .help("rotate the queries and keys by the positions parameter itself, with one theta "
                  "and one style over the whole head; or export without --split-cache"))


def check_split_cache(ctx, art) -> None:
    """E3318 unless the model's rotary positions are one table (compile/rotary_plan.py): the
    split cache computes that table outside the model."""
    plan = art.generator.rotary_plan
    if isinstance(plan, Rotary):
        return
    item = ctx.fn_item
    raise ExportError(f"not exported: --split-cache needs `{item.name}`'s rotary positions as one table",
                      [e3318(item.name, plan, item.span(item.name_pos))])
