"""`run_export`: one export from request to output, shared by the CLI and the server.

validate (the request, `--dim` names) → the E33xx checks → the params and the dims'
values (E3312) → every weight checked before anything is written (E3310, E3311, dtype,
truncation; extra keys warned) → the writer, into an atomic temporary renamed into place.
"""
from __future__ import annotations

import errno
import logging
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from ..diagnostics import Severity
from .atomic import atomic_output
from .output import OutputExists, check_output
from .context import ExportContext
from ..export_errors import ExportCancelled, ExportError, WriterUnavailable
from .request import unknown_dims
from .sizes import size_problem
from ..weights.check import check_weights
from ..weights.specs import find_function, resolve
from .writers import KIND, check_requirements, load_writer, missing_libraries

log = logging.getLogger("shapescript.export")

OK, FAILED, USAGE = 0, 1, 2  # the CLI's exit statuses


@dataclass
class ExportResult:
    ok: bool
    message: str
    diagnostics: list = field(default_factory=list)  # the errors that stopped it
    output: Optional[str] = None
    status: int = OK                                 # 0 written, 1 diagnostics/weights/writing, 2 usage
    warnings: list = field(default_factory=list)     # messages (extra keys, writers' notes)
    random_weights: bool = False


def _fail(message, status=FAILED, diagnostics=(), warnings=()) -> ExportResult:
    return ExportResult(False, message, list(diagnostics), None, status, list(warnings))


def _cancel_check(cancel) -> Optional[Callable[[], bool]]:
    if cancel is None:
        return None
    if hasattr(cancel, "is_set"):
        return cancel.is_set
    if hasattr(cancel, "cancelled"):
        return cancel.cancelled
    return cancel


def run_export(ws, request, progress=None, cancel=None) -> ExportResult:
    """Export `request.path` for `request.target`. `progress(message, done, total)` is
    called as the export moves (per tensor while writing); `cancel` is a callable, an
    Event or a Future: when it turns true the export stops and leaves nothing written.
    Bad input gives a result, never an exception; an internal error is logged and
    reported in the result."""
    cancelled = _cancel_check(cancel)
    missing = missing_libraries(request.target)
    if missing:  # a plain install: the exporter's libraries are the `export` extra
        return _fail(missing, USAGE)
    try:
        return _run(ws, request, progress, cancelled)
    except ExportCancelled:
        return _fail("export cancelled: nothing was written")
    except ExportError as e:
        return _fail(e.message, USAGE if isinstance(e, OutputExists) else FAILED, e.diagnostics)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            return _fail(f"no space left on the device writing `{request.output}`: nothing was written")
        return _fail(f"can't write `{request.output}`: {e.strerror or e}")
    except Exception as e:  # a bug: logged with its traceback, and said
        log.exception("the %s export of %s failed", request.target, request.path)
        return _fail(f"internal error in the {request.target} export: {type(e).__name__}: {e}")


def _run(ws, request, progress, cancelled) -> ExportResult:

    def step(message, done=0, total=1):
        if progress is not None:
            progress(message, done, total)
        if cancelled is not None and cancelled():
            raise ExportCancelled()

    path = ws.norm(request.path)
    if ws.file(path) is None:
        return _fail(f"can't read `{path}`", USAGE)
    if request.dims:
        ws.set_dim_overrides({**ws.dim_overrides, **request.dims})
    bad = unknown_dims(ws, [path], list(request.explicit_dims))
    if bad:
        return _fail(bad, USAGE)
    try:
        fn_item = find_function(ws.program, path, request.fn, request.target)
    except ExportError as e:
        return _fail(e.message, USAGE)

    sources = [path] + ws.import_closure(path)
    check_output(request.output, KIND[request.target], request.force, sources)  # before any work

    step(f"checking `{fn_item.name}` for {request.target}")
    ws.set_tensor_parallel(request.tensor_parallel)  # E3307, for a vllm export asked to split
    errors = _export_errors(ws, path, fn_item.name, request.target)
    if errors:
        n = len(errors)
        return _fail(f"not exported: {n} error{'s' if n != 1 else ''} stop{'s' if n == 1 else ''} "
                     f"the {request.target} export", FAILED, errors)

    resolved = resolve(ws.program, path, fn_item)
    inferred_note = None
    if resolved.diagnostics and request.weights and not request.random_weights and not request.weights_map:
        resolved, inferred_note, errors = _dims_from_checkpoint(ws, request, path, fn_item, resolved)
        if errors:
            n = len(errors)
            return _fail(f"not exported: the dims read from the checkpoint give {n} error{'s' if n != 1 else ''}",
                         FAILED, errors, [inferred_note])
    if resolved.diagnostics:
        n = len(resolved.diagnostics)
        return _fail(f"not exported: {n} dim{'s' if n != 1 else ''} ha{'ve' if n != 1 else 's'} no value",
                     FAILED, resolved.diagnostics)

    too_big = size_problem(resolved.specs, request, getattr(request, "max_tensor_size", None))
    if too_big:
        return _fail(too_big, FAILED)

    step(f"checking the weights of {len(resolved.specs)} params")
    source, warnings = None, []
    if request.random_weights:
        from ..weights.random_init import check_init  # deferred: numpy, only for random weights
        for spec in resolved.specs:
            check_init(spec)
    else:
        from ..weights.match_by_map import import_mapped  # deferred: numpy and gguf
        from ..weights.match_by_role import import_checkpoint  # deferred: numpy and gguf
        from ..weights.recognise import open_weights  # deferred: numpy and gguf
        source, ckpt = open_weights(request.weights, resolved.specs, request.weights_map)
        if ckpt is not None and request.weights_map is not None:
            step(f"reading {ckpt.label()} through {request.weights_map}")
            source, import_notes, warnings = import_mapped(ws.program, request, resolved, ckpt, request.weights_map)
        elif ckpt is not None:
            step(f"matching {ckpt.label()} to `{fn_item.name}` by role")
            source, import_notes, warnings = import_checkpoint(ws.program, request, resolved, ckpt)
        if ckpt is not None:
            warnings = warnings + import_notes + ([inferred_note] if inferred_note else [])
            if request.tokenizer is None and ckpt.tokenizer_dir():  # --tokenizer DIR still overrides
                request = replace(request, tokenizer=ckpt.tokenizer_dir())
            report = None
        else:
            report = check_weights(resolved, source)
            warnings = report.warnings
        if report is not None and not report.ok:
            parts = []
            if report.diagnostics:
                n = len(report.diagnostics)
                parts.append(f"{n} param{'s' if n != 1 else ''} can't be read from the weights")
            parts.extend(report.errors)
            return _fail("not exported: " + "; ".join(parts), FAILED, report.diagnostics, warnings)

    try:
        writer = load_writer(request.target)
        check_requirements(request.target)
    except WriterUnavailable as e:
        return _fail(str(e), USAGE, warnings=warnings)

    with atomic_output(request.output, KIND[request.target], request.force, sources,
                       request.target, request.path) as tmp:
        ctx = ExportContext(ws, request, resolved, source, tmp, progress, cancelled)
        ctx.check_cancelled()
        summary = writer(ctx)
        ctx.check_cancelled()
    message = summary or f"wrote {request.output}"
    if request.random_weights:
        message += f"; {request.weights_note()}"
    return ExportResult(True, message, [], request.output, OK, warnings + ctx.notes, request.random_weights)


def _dims_from_checkpoint(ws, request, path: str, fn_item, resolved):
    """The dims the source leaves open read from the checkpoint `--weights` names
    (docs/importing-weights.md), then the dims derived from them computed (`Dh = D / H`):
    (resolved again, the note naming them or None, the errors those values give the
    source: a quotient that doesn't divide)."""
    from ..weights.dims_from_checkpoint import infer_dims  # deferred: numpy and gguf
    from ..weights.recognise import open_weights  # deferred: numpy and gguf
    _, ckpt = open_weights(request.weights, resolved.specs)
    inferred = infer_dims(ws.program, request, path, fn_item, ckpt) if ckpt is not None else {}
    if not inferred:
        return resolved, None, []
    ws.set_dim_overrides({**ws.dim_overrides, **inferred})
    note = "dims read from the checkpoint: " + ", ".join(f"{k}={v}" for k, v in inferred.items())
    errors = _export_errors(ws, path, fn_item.name, request.target)
    if errors:
        return resolved, note, errors
    after = resolve(ws.program, path, fn_item)
    derived = [f"{k}={v}" for k, v in after.dims.items() if k not in resolved.dims and k not in inferred]
    return after, note + ("; computed from them: " + ", ".join(derived) if derived else ""), []


def _export_errors(ws, path: str, fn: str, target: str) -> list:
    """The errors that stop this export: the file's own, and E33xx for the function."""
    with ws.export_request(path, fn, target):
        return [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR]
