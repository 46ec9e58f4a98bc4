"""The editor's Export, in plain data: the same request as `shapescript export`, run on a
private workspace built from the open documents (so typing stays checked meanwhile).

`export_from_editor` takes the command's options (already checked for their types by the
server), the open documents, the settings and the workspace folder; it builds the request
(`export/request.py`: the settings give the defaults, relative paths resolve against the
workspace root), refuses an output, weights or tokenizer outside the workspace, picks the
function at the cursor when none is named (the code lens's rule), runs `run_export`, and
words the closing message (the output, warnings, the first diagnostics). Never raises on
bad input: a bad option is a result with status 2.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..export_errors import RequestError
from ..export.request import make_request
from ..export.run import ExportResult, run_export
from ..files import outside_problem
from ..workspace import Workspace
from .lens import function_at

SHOWN = 5  # diagnostics written out in the message; the rest are counted


@dataclass
class EditorExport:
    result: ExportResult
    fn: Optional[str]                              # the function exported (or asked for)
    message: str                                   # what the editor shows
    lines_for: Callable = None                     # path -> LineIndex of the texts exported
    diagnostics: list = field(default_factory=list)  # core Diagnostics that stopped it


def export_from_editor(path: str, target: str, options: dict, docs: list, settings, root: Optional[str],
                       access, position: Optional[tuple] = None, progress=None,
                       cancelled=None) -> EditorExport:
    """`options`: fn output weights random seed dtype force dims tokenizer weightsMap
    prefill_length cache_length quantize split_cache; `docs`: [(path, text, version)] of the open
    documents; `position`: (line, UTF-16 character) of the cursor, or None."""
    fn = options.get("fn")
    try:
        request = make_request(path, target, fn=fn, output=options.get("output"), weights=options.get("weights"),
                               random_weights=options.get("random"), seed=options.get("seed"),
                               dtype=options.get("dtype"), force=bool(options.get("force", False)),
                               dims=options.get("dims") or {}, tokenizer=options.get("tokenizer"),
                               weights_map=options.get("weightsMap"), prefill_length=options.get("prefill_length"),
                               cache_length=options.get("cache_length"), quantize=options.get("quantize"),
                               split_cache=options.get("split_cache"),
                               settings=settings, settings_dir=root, base=root)
    except RequestError as e:
        return _done(ExportResult(False, str(e), status=2), fn)
    # the editor's export reads and writes inside the workspace only (the CLI anywhere)
    problem = next((p for p in (outside_problem(request.output, access, "the output"),
                                request.weights and outside_problem(request.weights, access, "the weights"),
                                request.tokenizer and outside_problem(request.tokenizer, access, "the tokenizer"))
                    if p), None)
    if problem:
        return _done(ExportResult(False, problem + "; nothing was written", status=2), fn)
    ws = Workspace(dict(request.dims), access)
    ws.set_default_targets(settings.default_targets)
    for p, text, version in docs:
        ws.set_text(p, text, version)
    if fn is None and position is not None and ws.file(path) is not None:
        fn = function_at(ws, path, ws.file(path).lines.offset_utf16(*position))
    request.fn = fn
    result = run_export(ws, request, progress, cancelled)

    def lines_for(p):
        f = ws.file(p)
        return f.lines if f is not None else None

    return _done(result, fn, lines_for)


def _done(result: ExportResult, fn, lines_for=None) -> EditorExport:
    message = result.message
    if result.ok and result.output and result.output not in message:
        message += f": {result.output}"
    if result.warnings:
        message += "\n" + "\n".join(f"warning: {w}" for w in result.warnings)
    shown = [_line(d, lines_for) for d in result.diagnostics]
    if shown:
        message += "\n" + "\n".join(shown[:SHOWN]) + (f"\n… and {len(shown) - SHOWN} more"
                                                       if len(shown) > SHOWN else "")
    return EditorExport(result, fn, message, lines_for, list(result.diagnostics))


def _line(d, lines_for) -> str:
    lines = lines_for(d.path) if lines_for is not None else None
    line, col = lines.line_col(d.span.abs_start) if lines is not None else (0, 0)
    return f"{os.path.basename(d.path)}:{line + 1}:{col + 1}: {d.code} {d.message}"
