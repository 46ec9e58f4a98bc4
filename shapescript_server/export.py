"""The export code lens and `workspace/executeCommand` `shapescript.export`.

The command takes one object: {uri, fn, target, output, weights or random, seed, dtype,
force, dims, tokenizer, position}. It builds the same request as `shapescript export`
(`shapescript_core.export.request.make_request`: the settings give the defaults, relative
paths resolve against the workspace root) and runs the same backend (`run_export`) on a
private workspace built from the open documents, on a thread of its own so typing stays
checked meanwhile. It reports work-done progress that moves per tensor; a
`window/workDoneProgress/cancel` stops it and leaves nothing written. It ends with a
message naming the output, or the diagnostics that stopped it.
"""
from __future__ import annotations

import asyncio
import os
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams

from shapescript_core.export.request import RequestError, make_request
from shapescript_core.export.run import ExportResult, run_export
from shapescript_core.files import outside_problem
from shapescript_core.targets import TARGETS
from shapescript_core.ide import lens as ide_lens
from shapescript_core.workspace import Workspace

from . import convert
from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer
from .documents import path_of

COMMAND = convert.EXPORT_COMMAND


def _args(params: T.ExecuteCommandParams) -> dict:
    args = params.arguments or []
    a = args[0] if args else None
    if not isinstance(a, dict):
        raise JsonRpcInvalidParams("shapescript.export takes one object: {uri, fn, target, output, weights | random, dims}")
    if not isinstance(a.get("uri"), str):
        raise JsonRpcInvalidParams("shapescript.export needs `uri`, the file to export from")
    if a.get("target") not in TARGETS:
        raise JsonRpcInvalidParams(f"shapescript.export needs `target`: one of {', '.join(TARGETS)}")
    dims = a.get("dims") or {}
    if not isinstance(dims, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                             for v in dims.values()):
        raise JsonRpcInvalidParams("`dims` takes {NAME: positive integer}")
    for key in ("fn", "output", "weights", "dtype", "tokenizer"):
        if a.get(key) is not None and not isinstance(a[key], str):
            raise JsonRpcInvalidParams(f"`{key}` takes a string")
    for key in ("random", "force"):
        if a.get(key) is not None and not isinstance(a[key], bool):
            raise JsonRpcInvalidParams(f"`{key}` takes true or false")
    seed = a.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise JsonRpcInvalidParams("`seed` takes a non-negative integer")
    convert.position_json(a.get("position"))
    return a


def _diag_line(d, lines_for) -> str:
    line, col = lines_for(d.path).line_col(d.span.abs_start)
    return f"{os.path.basename(d.path)}:{line + 1}:{col + 1}: {d.code} {d.message}"


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_CODE_LENS, T.CodeLensOptions(resolve_provider=False))
    @guarded()
    async def code_lens(ls: ShapeScriptServer, params: T.CodeLensParams):
        uri = params.text_document.uri
        path, text, version = ls.snapshot(uri)

        def job():
            if not ls.sync(path, text, version):
                return None
            lines = ls.lines_for(path)
            return [c for lens in ide_lens.export_lenses(ls.ws, path) for c in convert.code_lenses(lens, lines, uri)]

        return await ls.query(job)

    @guarded()
    async def export_command(ls: ShapeScriptServer, params: T.ExecuteCommandParams):
        a = _args(params)
        uri, target = a["uri"], a["target"]
        cfg = ls.config
        path = path_of(uri)
        position = a.get("position")
        open_docs = [(d.path, d.text, d.version) for d in ls.docs]
        default_targets = set(cfg.default_targets) if cfg.default_targets else None
        fn_name = a.get("fn")
        try:
            request = make_request(path, target, fn=fn_name, output=a.get("output"), weights=a.get("weights"),
                                   random_weights=a.get("random"), seed=a.get("seed"), dtype=a.get("dtype"),
                                   force=bool(a.get("force", False)), dims=a.get("dims") or {},
                                   tokenizer=a.get("tokenizer"), settings=cfg, settings_dir=ls.root,
                                   base=ls.root)
        except RequestError as e:
            request, failure = None, ExportResult(False, str(e), status=2)
        access = ls.access()
        if request is not None:
            # the editor's export reads and writes inside the workspace only (the CLI anywhere)
            problem = next((p for p in (outside_problem(request.output, access, "the output"),
                                        request.weights and outside_problem(request.weights, access, "the weights"),
                                        request.tokenizer and outside_problem(request.tokenizer, access,
                                                                              "the tokenizer"))
                            if p), None)
            if problem:
                request, failure = None, ExportResult(False, problem + "; nothing was written", status=2)

        token = await _progress_token(ls, params)
        if token is not None:
            ls.work_done_progress.begin(token, T.WorkDoneProgressBegin(
                title=f"Exporting {fn_name or 'the exported function'} for {target}", percentage=0,
                cancellable=True))
        cancel_future = ls.work_done_progress.tokens.get(token) if token is not None else None
        shown_percent = [0]

        def progress(message: str, done: int, total: int):
            if token is None:
                return
            # percentages only go up: a writer's second file starts again at 0
            percent = max(shown_percent[0], min(99, int(100 * done / total)) if total > 0 else 0)
            shown_percent[0] = percent
            ls.call_soon(ls.work_done_progress.report, token,
                         T.WorkDoneProgressReport(message=message, percentage=percent))

        def job():
            ws = Workspace(dict(request.dims), access)
            ws.set_default_targets(default_targets)
            for p, text, version in open_docs:
                ws.set_text(p, text, version)
            fn = fn_name
            if fn is None and isinstance(position, dict) and ws.file(path) is not None:
                lines = ws.file(path).lines
                off = lines.offset_utf16(int(position.get("line", 0)), int(position.get("character", 0)))
                fn = ide_lens.function_at(ws, path, off)
            request.fn = fn
            result = run_export(ws, request, progress,
                                cancel_future.cancelled if cancel_future is not None else None)

            def lines_for(p):
                f = ws.file(p)
                return f.lines if f is not None else ls.lines_for(p)

            shown = [_diag_line(d, lines_for) for d in result.diagnostics]
            lsp = [convert.diagnostic(d, lines_for, ls.docs.uri_for, ls.docs.version) for d in result.diagnostics]
            return result, fn, shown, lsp

        try:
            if request is None:
                result, fn, shown, lsp = failure, fn_name, [], []
            else:
                result, fn, shown, lsp = await asyncio.wrap_future(ls.export_pool.submit(job))
        except BaseException:
            if token is not None:
                ls.work_done_progress.end(token, T.WorkDoneProgressEnd(message="export failed"))
                ls.work_done_progress.tokens.pop(token, None)
            raise
        message = result.message
        if result.ok and result.output and result.output not in message:
            message += f": {result.output}"
        if result.warnings:
            message += "\n" + "\n".join(f"warning: {w}" for w in result.warnings)
        if shown:
            message += "\n" + "\n".join(shown[:5]) + (f"\n… and {len(shown) - 5} more" if len(shown) > 5 else "")
        if token is not None:
            ls.work_done_progress.end(token, T.WorkDoneProgressEnd(message=result.message))
            ls.work_done_progress.tokens.pop(token, None)
        ls.show(f"shapescript: {message}", T.MessageType.Info if result.ok else T.MessageType.Warning)
        return {"ok": result.ok, "message": message, "output": result.output, "fn": fn, "target": target,
                "diagnostics": lsp, "random_weights": result.random_weights}

    async def run(params: T.ExecuteCommandParams):
        return await export_command(ls, params)

    ls.commands[COMMAND] = run


async def _progress_token(ls: ShapeScriptServer, params: T.ExecuteCommandParams):
    if params.work_done_token is not None:
        return params.work_done_token
    if not ls.client_supports("window.work_done_progress", False):
        return None
    token = f"shapescript-export-{uuid.uuid4()}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
    except Exception:
        return None
    return token
