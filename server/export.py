"""The export code lens and `workspace/executeCommand` `shapescript.export`.

The command takes one object: {uri, fn, target, output, weights or random, seed, dtype,
force, dims, position}. It runs the same backend as `shapescript export`
(`shapescript_core.exporting.run_export`) on a private workspace built from the open
documents, on a thread of its own so typing stays checked meanwhile; it reports
work-done progress and ends with a message naming the output, or the diagnostics that
stopped it. The settings' `export` table gives the defaults.
"""
from __future__ import annotations

import asyncio
import os
import uuid

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams

from shapescript_core.exporting import TARGETS, ExportOptions, run_export
from shapescript_core.ide import lens as ide_lens
from shapescript_core.workspace import Workspace

from . import convert
from .app import ShapeScriptServer, guarded
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
    for key in ("fn", "output", "weights", "dtype"):
        if a.get(key) is not None and not isinstance(a[key], str):
            raise JsonRpcInvalidParams(f"`{key}` takes a string")
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
        defaults = cfg.export
        dims = {**cfg.dims, **{str(k): v for k, v in (a.get("dims") or {}).items()}}
        options = ExportOptions(
            output=a.get("output") or defaults.get("output"),
            weights=a.get("weights") or (None if a.get("random") else defaults.get("weights")),
            random_weights=bool(a.get("random", defaults.get("random_weights", False))),
            seed=int(a.get("seed", defaults.get("seed", 0)) or 0),
            dtype=a.get("dtype") or defaults.get("dtype", "f32"),
            force=bool(a.get("force", False)),
            dims=dims)
        if options.output and not os.path.isabs(options.output) and ls.root:
            options.output = os.path.join(ls.root, options.output)
        if options.weights and not os.path.isabs(options.weights) and ls.root:
            options.weights = os.path.join(ls.root, options.weights)
        path = path_of(uri)
        position = a.get("position")
        open_docs = [(d.path, d.text, d.version) for d in ls.docs]
        default_targets = set(cfg.default_targets) if cfg.default_targets else None

        token = await _progress_token(ls, params)
        fn_name = a.get("fn")
        if token is not None:
            ls.work_done_progress.begin(token, T.WorkDoneProgressBegin(
                title=f"Exporting {fn_name or 'the exported function'} for {target}", percentage=0))

        def progress(message: str, percent: int):
            if token is not None:
                ls.call_soon(ls.work_done_progress.report, token,
                             T.WorkDoneProgressReport(message=message, percentage=max(0, min(100, int(percent)))))

        def job():
            ws = Workspace(dims)
            ws.default_targets = default_targets
            for p, text, version in open_docs:
                ws.set_text(p, text, version)
            fn = fn_name
            if fn is None and isinstance(position, dict) and ws.file(path) is not None:
                lines = ws.file(path).lines
                off = lines.offset_utf16(int(position.get("line", 0)), int(position.get("character", 0)))
                fn = ide_lens.function_at(ws, path, off)
            result = run_export(ws, path, fn, target, options, progress)

            def lines_for(p):
                f = ws.file(p)
                return f.lines if f is not None else ls.lines_for(p)

            shown = [_diag_line(d, lines_for) for d in result.diagnostics]
            lsp = [convert.diagnostic(d, lines_for, ls.docs.uri_for, ls.docs.version) for d in result.diagnostics]
            return result, fn, shown, lsp

        try:
            result, fn, shown, lsp = await asyncio.wrap_future(ls.export_pool.submit(job))
        except BaseException:
            if token is not None:
                ls.work_done_progress.end(token, T.WorkDoneProgressEnd(message="export failed"))
            raise
        message = result.message
        if result.ok and result.output and result.output not in message:
            message += f": {result.output}"
        if shown:
            message += "\n" + "\n".join(shown[:5]) + (f"\n… and {len(shown) - 5} more" if len(shown) > 5 else "")
        if token is not None:
            ls.work_done_progress.end(token, T.WorkDoneProgressEnd(message=result.message))
        ls.show(f"shapescript: {message}", T.MessageType.Info if result.ok else T.MessageType.Warning)
        return {"ok": result.ok, "message": message, "output": result.output, "fn": fn, "target": target,
                "diagnostics": lsp}

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
