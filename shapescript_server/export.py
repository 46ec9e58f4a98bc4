"""The export code lens and `workspace/executeCommand` `shapescript.export`.

The command takes one object: {uri, fn, target, output, weights or random, seed, dtype,
force, dims, tokenizer, position}, and for litert prefill_length, cache_length, quantize,
split_cache.
The handler converts in, asks the core (`shapescript_core.ide.export.export_from_editor`:
the same request and backend as `shapescript export`, on a private workspace of the open
documents) on a thread of its own so typing stays checked meanwhile, and converts out.
It reports work-done progress that moves per tensor; a `window/workDoneProgress/cancel`
stops it and leaves nothing written. It ends with a message naming the output, or the
diagnostics that stopped it.
"""
from __future__ import annotations

import asyncio
import functools
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams

from shapescript_core.ide import lens as ide_lens
from shapescript_core.ide.export import export_from_editor
from shapescript_core.targets import TARGETS

from . import convert
from .guard import guarded
from .reads import read_request

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
    for key in ("fn", "output", "weights", "dtype", "tokenizer", "quantize"):
        if a.get(key) is not None and not isinstance(a[key], str):
            raise JsonRpcInvalidParams(f"`{key}` takes a string")
    for key in ("random", "force", "split_cache"):
        if a.get(key) is not None and not isinstance(a[key], bool):
            raise JsonRpcInvalidParams(f"`{key}` takes true or false")
    for key in ("prefill_length", "cache_length"):
        v = a.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise JsonRpcInvalidParams(f"`{key}` takes a positive integer")
    seed = a.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise JsonRpcInvalidParams("`seed` takes a non-negative integer")
    convert.position_json(a.get("position"))
    return a


def _ask_core(ls: ShapeScriptServer, a: dict, progress: "_Progress"):
    """Convert in: the question for the core, the open documents as they are now (it runs
    on the export thread)."""
    pos = convert.position_json(a.get("position"))
    return functools.partial(export_from_editor, path_of(a["uri"]), a["target"], a,
                             [(d.path, d.text, d.version) for d in ls.docs], ls.config, ls.root, ls.access(),
                             (pos["line"], pos["character"]) if pos else None, progress.report, progress.cancelled)


class _Progress:
    """The command's work-done progress: percentages that only go up, and its cancel."""

    def __init__(self, ls: ShapeScriptServer, token):
        self.ls, self.token, self.percent = ls, token, 0
        future = ls.work_done_progress.tokens.get(token) if token is not None else None
        self.cancelled = future.cancelled if future is not None else None

    @classmethod
    async def start(cls, ls: ShapeScriptServer, params: T.ExecuteCommandParams) -> "_Progress":
        token = await _progress_token(ls, params)
        if token is not None:
            a = params.arguments[0]
            ls.work_done_progress.begin(token, T.WorkDoneProgressBegin(
                title=f"Exporting {a.get('fn') or 'the exported function'} for {a['target']}", percentage=0,
                cancellable=True))
        return cls(ls, token)

    async def until(self, work):
        """The core's answer; a failure closes the progress before it propagates."""
        try:
            return await work
        except BaseException:
            if self.token is not None:
                self.ls.work_done_progress.end(self.token, T.WorkDoneProgressEnd(message="export failed"))
                self.ls.work_done_progress.tokens.pop(self.token, None)
            raise

    def report(self, message: str, done: int, total: int):
        if self.token is None:
            return
        # a writer's second file starts again at 0
        self.percent = max(self.percent, min(99, int(100 * done / total)) if total > 0 else 0)
        self.ls.call_soon(self.ls.work_done_progress.report, self.token,
                          T.WorkDoneProgressReport(message=message, percentage=self.percent))

    def end(self, ls: ShapeScriptServer, a: dict, outcome) -> dict:
        """Convert out: the progress closed, the message shown, the command's answer."""
        result = outcome.result
        if self.token is not None:
            ls.work_done_progress.end(self.token, T.WorkDoneProgressEnd(message=result.message))
            ls.work_done_progress.tokens.pop(self.token, None)
        ls.show(f"shapescript: {outcome.message}", T.MessageType.Info if result.ok else T.MessageType.Warning)

        def lines_for(p):
            return (outcome.lines_for(p) if outcome.lines_for is not None else None) or ls.lines_for(p)

        lsp = [convert.diagnostic(d, lines_for, ls.docs.uri_for, ls.docs.version) for d in outcome.diagnostics]
        return {"ok": result.ok, "message": outcome.message, "output": result.output, "fn": outcome.fn,
                "target": a["target"], "diagnostics": lsp, "random_weights": result.random_weights}


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_CODE_LENS, T.CodeLensOptions(resolve_provider=False))
    def code_lens(ls: ShapeScriptServer, params: T.CodeLensParams):
        uri = params.text_document.uri

        def answer(path):
            lines = ls.lines_for(path)
            return [c for lens in ide_lens.export_lenses(ls.ws, path) for c in convert.code_lenses(lens, lines, uri)]

        return answer

    @guarded()
    async def export_command(ls: ShapeScriptServer, params: T.ExecuteCommandParams):
        a, progress = _args(params), await _Progress.start(ls, params)
        outcome = await progress.until(asyncio.wrap_future(ls.export_pool.submit(_ask_core(ls, a, progress))))
        return progress.end(ls, a, outcome)

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
