"""The source's roles: its exported function traced and matched by the architecture
matcher (`arch.match`), which says which param is block N's query projection, the final
norm, the output layer..., and how its layout differs from llama.cpp's."""
from __future__ import annotations

from ..compile.graph import CompileError, trace
from ..export_errors import ExportError
from ..arch.plan import Departure
from ..arch.match import match
from .import_diagnostics import unknown_architecture


def plan_for_import(db, request, resolved, label: str):
    """The GGUF plan of `resolved`'s function, or ExportError (one E3314) when it matches
    no architecture; `label` names the checkpoint in the message."""
    try:
        tr = trace(db, request.path, resolved.fn_item.name, resolved.dims)
    except CompileError as e:
        raise ExportError(f"can't follow `{resolved.fn_item.name}` to match it with {label}: {e}") from None
    plan = match(tr, importing=True)  # a window or a routing changes no role (Mistral's is llama's layout)
    if isinstance(plan, Departure):
        raise ExportError("not exported: the checkpoint can't be matched to the source",
                          diagnostics=[unknown_architecture(resolved, label, plan)])
    return plan
