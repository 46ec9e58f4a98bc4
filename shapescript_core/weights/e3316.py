"""E3316, a warning: a setting of the source (rotary theta and scaling, the attention's
scale, a norm's epsilon) that the checkpoint's config contradicts. Checked in
weights/import_diagnostics.py, when a checkpoint is imported."""
from __future__ import annotations

from ..diagnostics import Diagnostic, warning


def e3316(what: str, ours, theirs, where: str, span, folded_into: str | None = None) -> Diagnostic:
    """A warning: the export goes on with the source's value; or, `folded_into` (the
    params the import changed), with the checkpoint's, the difference folded into those
    params' weights."""
    if folded_into is None:
        then = "the export keeps the source's, and its outputs will differ from the original model's"
        fix = f"write the checkpoint's {what} in the source"
    else:
        then = (f"the export folds the difference into the weights of {folded_into}: its outputs are the "
                f"original model's, but those weights are not the checkpoint's")
        fix = f"write the checkpoint's {what} in the source, and its weights are exported unchanged"
    return (warning("E3316", f"the source's {what} is {ours}, but the checkpoint's {where} says {theirs}: {then}",
                    span, "the exported function")
            .help(fix))
