"""The export backend shared by the CLI and the language server.

`run_export` checks the function for the target (E33xx) and, when they pass, hands it
to the target's writer. Until the writers exist, it says which target is not available.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from .diagnostics import Severity

TARGETS = ("hf", "vllm", "gguf")


@dataclass
class ExportOptions:
    output: Optional[str] = None
    weights: Optional[str] = None
    random_weights: bool = False
    seed: int = 0
    dtype: str = "f32"
    force: bool = False
    dims: dict = field(default_factory=dict)


@dataclass
class ExportResult:
    ok: bool
    message: str
    diagnostics: list = field(default_factory=list)  # the errors that stopped it
    output: Optional[str] = None


def _writer(target: str):
    """The writer for a target, or None while it is not available."""
    try:
        from .export import writers  # noqa: F401  (a later layer)
    except ImportError:
        return None
    return getattr(writers, f"write_{target}", None)


def run_export(ws, path: str, fn: Optional[str], target: str, options: ExportOptions,
               progress: Callable[[str, int], None] | None = None) -> ExportResult:
    if target not in TARGETS:
        return ExportResult(False, f"unknown target `{target}`: use one of {', '.join(TARGETS)}")
    path = ws.norm(path)
    f = ws.file(path)
    if f is None:
        return ExportResult(False, f"can't read `{path}`")
    if fn is not None and not any(it.kind in ("fn", "broken") and it.name == fn for it in f.items):
        return ExportResult(False, f"`{fn}` isn't a function in {path}")
    if progress:
        progress(f"checking {fn or 'the exported function'} for {target}", 10)
    saved = ws.export_requests.get(path)
    ws.export_requests[path] = [(fn, {target})]
    ws.invalidate(path)
    try:
        errors = [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR]
    finally:
        if saved is None:
            ws.export_requests.pop(path, None)
        else:
            ws.export_requests[path] = saved
        ws.invalidate(path)
    if errors:
        n = len(errors)
        return ExportResult(False, f"not exported: {n} error{'s' if n != 1 else ''} stop"
                                   f"{'s' if n == 1 else ''} the {target} export", errors)
    writer = _writer(target)
    if writer is None:
        return ExportResult(False, f"the checks pass, but the {target} writer is not available yet")
    if progress:
        progress(f"writing {target}", 30)
    return writer(ws, path, fn, options, progress)
