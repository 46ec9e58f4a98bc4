"""textDocument/codeAction: every fix the diagnostics carry, as a quick fix.

The fixes ride in each LSP diagnostic's `data` (with the document versions they were
computed for), so a code action reads them back instead of re-checking. Diagnostics that
come without data, or from an older version, are matched against a fresh check instead.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.check.codes.e3306_model_first import model_first_at

from . import convert
from .guard import guarded
from .reads import ask_core

if TYPE_CHECKING:
    from .app import ShapeScriptServer

log = logging.getLogger("shapescript.server")


def _key(p: T.Position):
    return (p.line, p.character)


def _overlaps(a: T.Range, b: T.Range) -> bool:
    return _key(a.start) <= _key(b.end) and _key(b.start) <= _key(a.end)


def _fixes(d: T.Diagnostic) -> list:
    """The fixes one of our diagnostics carries (InvalidParams if they are malformed);
    other sources' data is theirs, not read."""
    if d.source not in (None, convert.SOURCE):
        return []
    return convert.fixes_from_data(d.data)


def _current(fix: dict, uri: str, version) -> bool:
    versions = fix.get("versions") or {}
    return versions.get(uri, version) == version


async def _workspace_wide(ls: ShapeScriptServer, path, text, version, diagnostics) -> list:
    """E3306's fix, recomputed to reach every file of the workspace folder that imports
    this one, open or not (a diagnostic's own copy reaches the open files only)."""
    wanted = [d for d in diagnostics if str(d.code) == "E3306" and d.source in (None, convert.SOURCE)]
    if not wanted or not ls.roots:
        return []

    def answer(path):
        lines = ls.lines_for(path)
        out = []
        for d in wanted:
            fix = model_first_at(ls.ws.program, path, convert.offset(lines, d.range.start), ls.roots)
            if fix is not None:
                out.append((convert.fix_data(fix, ls.lines_for, ls.docs.uri_for, ls.docs.version), d))
        return out

    return await ask_core(ls, (path, text, version), answer, missing=[])


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_CODE_ACTION,
                T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix], resolve_provider=False))
    @guarded()
    async def code_action(ls: ShapeScriptServer, params: T.CodeActionParams):
        only = params.context.only
        if only and not any(T.CodeActionKind.QuickFix.value.startswith(str(getattr(k, "value", k)))
                            for k in only):
            return None
        uri = params.text_document.uri
        path, text, version = ls.snapshot(uri)
        doc_changes = bool(ls.client_supports("workspace.workspace_edit.document_changes", False))
        actions: list = []
        titles: set = set()

        def add(fix: dict, diag, first: bool):
            if fix["title"] in titles:
                return
            titles.add(fix["title"])
            actions.append(convert.code_action(fix, diag, doc_changes, first))

        wide = await _workspace_wide(ls, path, text, version, params.context.diagnostics)
        for fix, d in wide:
            add(fix, d, True)  # before the diagnostic's own copy, which has the same title
        recheck: list = []
        rechecked: list = []
        for d in params.context.diagnostics:
            fixes = _fixes(d)
            if fixes and all(_current(f, uri, version) for f in fixes):
                for k, f in enumerate(fixes):
                    add(f, d, k == 0)
            elif d.source in (None, convert.SOURCE):
                recheck.append(d)
        if recheck or not params.context.diagnostics:
            codes = {str(d.code) for d in recheck if d.code is not None}

            def answer(path):
                return convert.diagnostics(ls.ws.diagnostics(path), path, ls.lines_for, ls.docs.uri_for,
                                           ls.docs.version)

            rechecked = await ask_core(ls, (path, text, version), answer, missing=[])
            for d in rechecked:
                if not _overlaps(d.range, params.range) or (codes and str(d.code) not in codes):
                    continue
                for k, f in enumerate(_fixes(d)):
                    add(f, d, k == 0)
        if not actions:
            _log_none(params, version, text is not None, len(wide), recheck, rechecked)
        return actions or None


def _log_none(params: T.CodeActionParams, version, is_open: bool, wide: int, recheck: list,
              rechecked: list):
    """Why a code-action request found no fix: the request's facts, for the log (an
    editor's "No code actions available" is otherwise unexplained)."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    r = params.range
    sent = [(str(d.code), d.range.start.line, d.range.start.character, d.source,
             sorted(d.data) if isinstance(d.data, dict) else type(d.data).__name__)
            for d in params.context.diagnostics]
    found = [(str(d.code), d.range.start.line, d.range.start.character, len(_fixes(d)))
             for d in rechecked]
    log.debug("codeAction %s v%s (%s) at %d:%d-%d:%d only=%s trigger=%s: no fix; diagnostics sent %s; "
              "workspace-wide %d; rechecked %d, found %s", params.text_document.uri, version,
              "open" if is_open else "not open", r.start.line, r.start.character, r.end.line,
              r.end.character, params.context.only, params.context.trigger_kind, sent, wide,
              len(recheck), found)
