"""E3311: a tensor of the weights whose shape isn't the param's. Checked in
weights/check.py (`check_weights`), at export."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error
from .weight_messages import shape_text


def e3311(path: str, got: tuple, written: str, want: tuple, span) -> Diagnostic:
    """`written` is the field's type as the source writes it, `[V D]`."""
    return (error("E3311", f"`{path}` is {shape_text(got)} in the weights, but the model says "
                           f"{written} = {shape_text(want)}", span, f"declared {written} here")
            .help("give the dims the values the weights were trained with (--dim NAME=VALUE), "
                  "or declare the field in the layout the weights have"))
