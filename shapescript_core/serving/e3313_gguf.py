"""E3313: no llama.cpp architecture runs the model. Its check, for a `gguf` target once
E3301 to E3306 pass (entry.py), its message and help; the GGUF writer refuses an export
in the same words (`export_error_text`, export/gguf/writer.py).

Only where gguf was asked for: `@export(…, gguf)`, a check or export request for gguf
(`check --target gguf`, `export --gguf`, the editor's Export), or the settings' default
targets. A plain `forward` of a language model (rule 2 of SERVING-ENGINES.md, which
implies every target) is not held to llama.cpp's short list of architectures: vLLM and
Hugging Face run it whatever it computes (docs/serving-engines.md records this).

The exported function is traced (`compile.graph.trace`) and matched (`match`); a
departure is reported at the node where the model leaves the closest architecture,
with a label saying which architecture that is. A node in another file is reported at
the exported function's name, the label naming the place. A trace that can't be built
(a construct the compiler does not support yet) or params without sizes (E3312 at export)
give no E3313: the export reports those itself. No numpy and no gguf here.
"""
from __future__ import annotations

import logging
import os

from ..compile.graph import CompileError, trace
from ..diagnostics import error
from ..targets import asked_for
from ..arch.archs import names_in_words
from ..arch.match import match
from ..arch.plan import Departure
from .places import item_of_node

log = logging.getLogger("shapescript.export")


def message(reason: str) -> str:
    return f"no llama.cpp architecture runs this model: {reason}"


HELP = (f"Make the model one of llama.cpp's architectures ({names_in_words(', ')}), or export it "
        "with --hf or --vllm, which run any model the checker accepts.")


def export_error_text(reason: str) -> str:
    """The GGUF writer's refusal, when the export gets that far (export/gguf/writer.py)."""
    return f"error[E3313]: {message(reason)}"


def check_gguf(prog, item) -> list:
    db = prog.db
    if not asked_for(item, "gguf", db.inputs.requests_of(prog.path), db.inputs.default_targets):
        return []
    try:
        # the verdict of every layer is the same, unless the loop binds its index (traced whole)
        tr = trace(prog.db, prog.path, item.name, unroll=2)
    except CompileError as e:
        log.debug("no E3313 check for `%s`: %s", item.name, e)
        return []
    if any(None in (n.shape or ()) for n in tr.params.values()):
        return []
    found = match(tr)
    if not isinstance(found, Departure):
        return []
    at = item_of_node(prog, tr, found.where)
    label = f"the closest architecture is {found.arch}"
    if at is not None and prog.local(at) and found.where.ast is not None:
        d = error("E3313", message(found.reason), at.span(found.where.ast.pos), label)
    else:
        where = ""
        if found.where is not None and found.where.where:
            path, line = found.where.where
            where = f" (the first departure is at {os.path.basename(path)}:{line})"
        d = error("E3313", message(found.reason), item.span(item.name_pos), label + where)
    return [d.help(HELP)]
