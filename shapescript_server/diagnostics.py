"""Diagnostics as the user types: document sync, checks on the core thread, versioned
publishing (push) and `textDocument/diagnostic` (pull)."""
from __future__ import annotations

import asyncio
import gc
import logging
import os
from typing import TYPE_CHECKING

from lsprotocol import types as T
from pygls.exceptions import JsonRpcContentModified

from shapescript_core.workspace import Cancelled

from .check_slice import AfterEarly
from . import convert, diagnostics_cache, diagnostics_json, first_publish, memory
from .documents import UNTITLED
from .guard import guarded
from .open_order import Unchecked
from .reads import ask_core

if TYPE_CHECKING:
    from .app import ShapeScriptServer

log = logging.getLogger("shapescript.server")

# A large file (first_publish.py) opened cold gets its syntax errors published as soon
# as it is parsed, before the check (then the complete diagnostics, same version); and
# its parsed items are kept on disk for the next session (parse_cache.py), written when
# the editor has been quiet for SAVE_AFTER seconds.
SAVE_AFTER = 2.0
TRIM_RELEASE = 200  # functions slimmed at once: then hand the freed pages back
IDLE_RETRY = 0.5  # seconds: a save that found the core busy looks again after this


def schedule_check(ls: ShapeScriptServer, uri: str):
    """Check an open document as it is now, on the core thread, and publish the result
    unless the client has moved past this version by then.

    Work for a version the client has moved past is dropped, not finished: a job whose
    version is no longer the document's does nothing (the newer change's job, queued
    behind it, parses and checks that text), and a check under way stops between two
    function bodies when a newer change arrives (what it checked stays cached). So a
    burst of keystrokes costs one check, of the last text.

    A document not checked since it was opened waits in `ls.unchecked`, and those are
    checked the most recent first (`_check_latest_opened`)."""
    doc = ls.docs.get(uri)
    if doc is None:
        return
    ls.generation += 1
    path, text, version = doc.path, doc.text, doc.version
    if _unchecked(ls).add(uri, (path, text, version)):
        ls.submit("check", lambda: _check_latest_opened(ls))
        return

    def stale() -> bool:
        return ls.docs.version(uri) != version

    ls.submit("check", lambda: _check(ls, uri, path, text, version, stale, stale, None))


def _unchecked(ls: ShapeScriptServer) -> Unchecked:
    """The documents opened and not checked since (made at the first open)."""
    u = getattr(ls, "unchecked", None)
    if u is None:
        u = ls.unchecked = Unchecked()
    return u


def _check_latest_opened(ls: ShapeScriptServer):
    """On the core thread: the document opened (or changed) last of those not checked
    since they were opened, checked first: the one the user looks at, of a restored
    session's many. The others are read at interface depth first (their functions'
    headers, Workspace.set_text), so this one's diagnostics do not wait for their bodies.
    A newer document opened meanwhile stops this check before its whole parse, or between
    two function bodies (what it checked stays cached); it goes back to wait, last."""
    _unchecked(ls).settle()
    got = _unchecked(ls).latest()
    if got is None:
        return
    uri, (path, text, version), mark, first = got

    def stale() -> bool:
        return ls.docs.version(uri) != version

    def cancelled() -> bool:
        return stale() or _unchecked(ls).opened_since(mark)

    if stale():
        return
    # typed in before this first check: parsed as opened, then changed as by any edit,
    # so that its check knows the edited items (Analyzer._early: checked and published
    # before the rest)
    edited = first != text
    if edited:
        ls.ws.set_text(path, first, None, interface=True)
    ls.ws.set_text(path, text, version, interface=True)  # a third of its parse: then a newer one is seen
    if cancelled() or _check(ls, uri, path, text, version, stale, cancelled, True,
                             lambda: _imports_at_interface_depth(ls, path), edited) is Cancelled:
        if not stale():  # a newer document came: it goes first
            _unchecked(ls).put_back(uri, (path, text, version))
            ls.submit("check", lambda: _check_latest_opened(ls))


def _imports_at_interface_depth(ls: ShapeScriptServer, path: str):
    """On the core thread: the editor texts of the open documents a document imports
    that wait for their first check, read at interface depth (function headers,
    Workspace.set_text): what its check reads of them, a third of a whole parse each."""
    waiting = {p: (t, v) for p, t, v in _unchecked(ls).waiting()}
    ls.ws.import_closure(path, waiting)  # each one reached: its editor text, not the file on disk


def _check(ls: ShapeScriptServer, uri: str, path: str, text: str, version, stale, cancelled, opened: bool,
           prepare=None, edited: bool = False):
    """On the core thread: parse and check a document's text and publish what it finds
    (`opened`: its first check since it was opened; None: when the workspace does not
    hold it yet; `edited`: a first check of a text typed in since the open), `prepare()`
    run after its syntax errors are published, before its check. Cancelled when
    `cancelled()` stopped it."""
    if stale():
        return None  # a newer change is queued behind this job: it checks and publishes
    if opened is None:
        opened = path not in ls.ws.files
    f = ls.ws.set_text(path, text, version)
    big = opened and first_publish.is_large(len(f.items))
    if big and ls.push and not edited and ls.replayed.get(uri) != version:  # not when the kept diagnostics are shown
        try:  # its bodies parsed: a change typed meanwhile stops it (what was parsed stays)
            syntax = ls.ws.syntax_diagnostics(path, cancelled)
        except Cancelled:
            return Cancelled
        _publish_soon(ls, uri, path, version, syntax)
    if big and ls.ws.parse_cache_used:
        ls.call_soon(_save_later, ls, uri, path)
    # checked before the next document's job parses, the file checked before it
    # trimmed first (it is no longer the one changed last): of the documents opened
    # with it (a restored session, a folder opened whole), one is held whole at a
    # time, not all of them at once; the peak of a cold open is what stays resident
    # (docs/architecture.md)
    if big:
        trim(ls)
    if prepare is not None:
        prepare()
    if stale():
        return None
    # a change typed while the file's first check runs: its own function first, published
    # before the rest of that check (Analyzer._early), then the complete list
    early = None
    made_early = []
    if edited or not opened:
        cancelled = AfterEarly(cancelled)

        def early(diags):
            if stale():
                return
            if ls.push:
                _publish_soon(ls, uri, path, version, diags)
            else:  # the answer of a pull of this version that comes (or waits) before the rest
                items = diagnostics_json.diagnostics(diags, path, ls.lines_for, ls.docs.uri_for, ls.docs.version)
                ls.call_soon(_early_pull, ls, uri, version, items)
                made_early.append(True)
            cancelled.published()
    try:
        ls.ws.analyze(path, cancelled=cancelled, early=early)
    except Cancelled:
        log.debug("check of %s version %s stopped: the document moved on, or another was opened", path, version)
        return Cancelled
    # the files it imports too: their fixes may reach into this one (calls to reorder)
    importers = ls.ws.importers(path)
    others = importers + [o for o in sorted(ls.ws.open)
                          if o != path and o not in importers and path in ls.ws.importers(o)]
    if ls.push:
        publish_file(ls, uri, path, version)
        for other in others:
            ls.pending[other] = None
        if ls.pending:
            ls.submit("republish dependents", lambda: republish_pending(ls, ls.generation))
    else:
        if made_early or uri in ls.kept_pull:
            a = ls.ws.analyze(path)
            items = diagnostics_json.diagnostics(a.diags if a else [], path, ls.lines_for, ls.docs.uri_for,
                                                   ls.docs.version)
            ls.call_soon(_kept_checked, ls, uri, version, items, _record(ls, a, path))
        if others:
            ls.call_soon(refresh_pull, ls)
    trim(ls)
    return None


def _publish_soon(ls: ShapeScriptServer, uri: str, path: str, version, diags: list):
    """On the core thread: a partial list of a version's diagnostics (its syntax errors
    at a cold open, or an edit's before the rest of the first check), converted and
    handed to the loop; the complete list follows, for the same version."""
    items = diagnostics_json.diagnostics(diags, path, ls.lines_for, ls.docs.uri_for, ls.docs.version)
    ls.call_soon(_publish, ls, uri, version, items)


def republish_pending(ls: ShapeScriptServer, generation: int):
    """On the core thread, after the edited document's own publish: the other open files
    an edit may have changed, each republished if its diagnostics did. Each is usually
    answered from the cache (an unchanged interface re-checks no importer). A newer change
    (any document) stops this between two files, or inside a check: what is left stays
    pending, and the newer change's job continues it after its own publish."""
    def moved_on() -> bool:
        return ls.generation != generation

    while ls.pending:
        if moved_on():
            return
        path = next(iter(ls.pending))
        try:
            ls.ws.analyze(path, cancelled=moved_on)
        except Cancelled:
            log.debug("republish of %s dropped: a newer change came", path)
            return
        ls.pending.pop(path, None)
        republish(ls, path)
        trim(ls)  # each file as soon as it is published: the next one's check reuses the memory


def trim(ls: ShapeScriptServer):
    """On the core thread, after a check is published: the files not edited lately keep
    only what their next check reads (Workspace.trim: the analyses not trimmed yet), and
    a large amount freed goes back to the system (memory.py)."""
    if ls.ws.trim() >= TRIM_RELEASE:
        memory.release()


def publish_file(ls: ShapeScriptServer, uri: str, path: str, version, only_if_changed: bool = False):
    """On the core thread: convert a file's diagnostics and hand them to the loop."""
    a = ls.ws.analyze(path)
    if only_if_changed and a is not None and ls.published_from.get(path) is a and \
            (ls.published.get(uri) or (None,))[0] == version and _local(a.diags, path):
        return  # the analysis it was published from still holds: nothing to convert
    items = diagnostics_json.diagnostics(a.diags if a else [], path, ls.lines_for, ls.docs.uri_for,
                                           ls.docs.version)
    ls.published_from[path] = a
    if only_if_changed and ls.published.get(uri) == (version, items):
        return
    ls.call_soon(_publish, ls, uri, version, items, _record(ls, a, path))


def _record(ls: ShapeScriptServer, a, path: str):
    """On the core thread: what an analysis's diagnostics were made from, for the next
    session (diagnostics_cache.py): ([(import, its text's hash)], settings); None when
    they are not to be kept."""
    if a is None or a.read_open or path.startswith(UNTITLED + os.sep):
        return None
    return [(p, _digest(ls, p)) for p, _ in a.stamp], settings_key(ls)


def _digest(ls: ShapeScriptServer, path: str):
    """On the core thread: the hash of the text the workspace holds for `path` (or why
    it could not be read), remembered while that file keeps that text (and no longer than the
    workspace keeps the file)."""
    f = ls.ws.file(path)
    if f is None:
        return diagnostics_cache.unread(getattr(ls.ws.refusal(path), "kind", None))
    memo = ls.digests.get(f)
    if memo is not None and memo[0] is f.text:
        return memo[1]
    h = diagnostics_cache.text_hash(f.text)
    ls.digests[f] = (f.text, h)
    return h


def settings_key(ls: ShapeScriptServer) -> str:
    """The settings the diagnostics depend on (diagnostics_cache.py)."""
    return diagnostics_cache.fingerprint(ls.config, ls.roots, ls.access())


def _kept_items(ls: ShapeScriptServer, uri: str):
    """On the loop: the diagnostics an earlier session kept for an open document's very
    text, settings and imports (diagnostics_cache.py), or None."""
    doc = ls.docs.get(uri)
    if doc is None or doc.path.startswith(UNTITLED + os.sep):
        return None
    open_texts = {d.path: d.text for d in ls.docs}
    return diagnostics_cache.kept(doc.path, doc.text, settings_key(ls), open_texts, ls.access(), ls.docs.version)


def show_kept(ls: ShapeScriptServer, uri: str) -> bool:
    """On the loop, at didOpen: publish the kept diagnostics of the document
    (`_kept_items`) before it is parsed. The check runs all the same; its publish of this
    version comes only if it differs. A document fast_start.py already published them
    for is only recorded as such. A client that pulls diagnostics gets them as the
    answer to its first pull (`hold_kept`)."""
    doc = ls.docs.get(uri)
    if doc is None:
        return False
    if not ls.push:
        return hold_kept(ls, uri)
    items = _shown_early(ls, uri, doc.version)
    if items is None:
        items = _kept_items(ls, uri)
        if items is None:
            return False
        _send(ls, uri, doc.version, items)
        _shown(ls, uri, doc.version, items)
    return True


def _shown_early(ls: ShapeScriptServer, uri: str, version) -> list | None:
    """At didOpen or didChange: the diagnostics fast_start.py published for this version
    of the document (one typed before the server ran: at the change that makes it),
    recorded as shown; None when it published none for it."""
    early = ls.shown_early.get(uri)
    if early is None or early[0] != version:
        return None
    del ls.shown_early[uri]
    _shown(ls, uri, version, early[1])
    return early[1]


def _shown(ls: ShapeScriptServer, uri: str, version, items: list):
    """What the editor shows for this version before its check: its check publishes only
    if it finds anything else."""
    ls.replayed[uri] = version
    ls.published[uri] = (version, items)


def show_first_lines(ls: ShapeScriptServer, uri: str):
    """On the loop, at didOpen when nothing kept was shown: a large file's syntax errors
    in its first lines (first_publish.py), at once, for its check waits behind those of
    the documents opened before it (a restored session opens many at once). Published
    to a client that takes pushes; held to answer a pulling client's first pull with,
    which is asked again when the check finds anything else (`_kept_checked`). Not
    again for the document fast_start.py published them for."""
    doc = ls.docs.get(uri)
    if doc is None or ls.first_lines_early.pop(uri, None) == doc.version:
        return
    items = first_publish.visible_syntax(doc.text, doc.path, uri, doc.version)
    if items is None:
        return
    if ls.push:
        _publish(ls, uri, doc.version, items)
    else:
        ls.kept_pull[uri] = [doc.version, items, False]


def hold_kept(ls: ShapeScriptServer, uri: str) -> bool:
    """Pull: keep the document's kept diagnostics to answer its first pull with, if it
    comes before the check is done; the check then asks the client to pull again only
    if it found something else (`_kept_checked`). A first pull fast_start.py answered
    (kept diagnostics, or a large file's first syntax errors) counts as answered."""
    early = ls.pulled_early.pop(uri, None)
    if early is not None and early[0] == ls.docs.version(uri):
        ls.kept_pull[uri] = [early[0], early[1], True]
        return True
    items = _kept_items(ls, uri)
    if items is None:
        return False
    ls.kept_pull[uri] = [ls.docs.version(uri), items, False]  # version, items, answered
    return True


def _early_pull(ls: ShapeScriptServer, uri: str, version, items: list):
    """On the loop: the early list of a version (Analyzer._early) for a client that pulls:
    the answer of its pull of that version, now if one waits (`pull_diagnostics`), or
    when it comes before the check is done; the check asks for a new pull if it then
    finds anything else (`_kept_checked`)."""
    if ls.docs.version(uri) != version:
        return
    ls.kept_pull[uri] = [version, items, False, "early"]
    for waiter in ls.pull_waiters.pop((uri, version), ()):
        if not waiter.done():
            waiter.set_result(None)


def _kept_checked(ls: ShapeScriptServer, uri: str, version, items: list, record=None):
    """On the loop, after the check of a document held kept diagnostics (pull): a pull
    answered with anything else is asked again; the check's diagnostics are kept for the
    next session (the pull that would have kept them was answered before the check)."""
    kept = ls.kept_pull.pop(uri, None)
    if kept is None or kept[0] != version or ls.docs.version(uri) != version:
        return
    if kept[2] and kept[1] != items:
        refresh_pull(ls)  # it answered with what the check no longer finds
    if record is not None and kept[1] != items:
        ls.published[uri] = (version, items)
        _keep_later(ls, uri, version, items, record)


def _local(diags: list, path: str) -> bool:
    """No diagnostic points into another file (whose lines may have moved since)."""
    return all(d.span.path == path and all(lb.span.path == path for lb in d.labels) for d in diags)


def republish(ls: ShapeScriptServer, path: str):
    """On the core thread: publish another open file again if its diagnostics changed
    (not if its own newer change is queued: that one publishes)."""
    uri = ls.docs.uri_for(path)
    f = ls.ws.files.get(path)
    if f is not None and ls.docs.version(uri) == f.version:
        publish_file(ls, uri, path, f.version, only_if_changed=True)


def _publish(ls: ShapeScriptServer, uri: str, version, items: list, record=None):
    """On the loop: publish, unless the document moved on or closed meanwhile. A complete
    publish (`record`: what it was made from) is not sent when it repeats the kept
    diagnostics shown at didOpen (show_kept), and is kept for the next session."""
    if ls.docs.get(uri) is None or ls.docs.version(uri) != version:
        return
    if record is not None and ls.replayed.get(uri) == version:
        del ls.replayed[uri]
        if ls.published.get(uri) == (version, items):
            if uri in ls.checked_early:  # made by fast_start.py's check, not read from disk: kept now
                ls.checked_early.discard(uri)
                _keep_later(ls, uri, version, ls.published[uri][1], record)
            return  # what the editor shows already
    ls.published[uri] = (version, items)
    _send(ls, uri, version, items)
    if record is not None:
        _keep_later(ls, uri, version, items, record)


def _send(ls: ShapeScriptServer, uri: str, version, items: list):
    ls.publish_json({"uri": uri, "version": version, "diagnostics": items})


def _keep_later(ls: ShapeScriptServer, uri: str, version, items: list, record):
    """On the loop: keep a complete publish on disk for the next session once the
    editor has been quiet for SAVE_AFTER seconds (diagnostics_cache.py)."""
    old = ls.keep_timers.pop(uri, None)
    if old is not None:
        old.cancel()

    def keep():
        ls.keep_timers.pop(uri, None)
        doc = ls.docs.get(uri)
        if doc is None or doc.version != version or ls.published.get(uri, (None, None))[1] is not items:
            return  # moved on: a later publish keeps its own
        path, digest = doc.path, diagnostics_cache.text_hash(doc.text)
        deps, settings = record
        ls.submit("keep the diagnostics", lambda: diagnostics_cache.save(path, digest, settings, deps, items))

    if ls.loop is not None:  # else not serving (tests of the scheduling): nothing to keep
        ls.keep_timers[uri] = ls.loop.call_later(SAVE_AFTER, keep)


def _save_later(ls: ShapeScriptServer, uri: str, path: str):
    """On the loop: keep the file's parsed items on disk once the editor is quiet and
    the core has nothing else to do (pickling a 10,000-line file's items costs about as
    much CPU as checking it: the files opened with it are checked first)."""
    version = ls.docs.version(uri)

    def save():
        if ls.docs.version(uri) != version:
            return _save_later(ls, uri, path)  # still typing: later
        if ls.core_busy():
            ls.loop.call_later(IDLE_RETRY, save)
            return
        ls.submit("save the parse cache", lambda: _save(ls, uri, path))

    ls.loop.call_later(SAVE_AFTER, save)


def _save(ls: ShapeScriptServer, uri: str, path: str):
    """On the core thread: the file's parsed items on disk, and the pickler's memory back
    to the system (memory.py): its garbage collected first (a few milliseconds: the
    parsed items are frozen out of the collector's sight, workspace.py), so the pages it
    held are free to go back."""
    if ls.docs.get(uri) is not None and ls.ws.save_parse_cache(path):
        gc.collect()
        memory.release()


def _log_failure(task):
    """A check's answer nobody awaits any more: its failure is still logged."""
    exc = None if task.cancelled() else task.exception()
    if exc is not None and not isinstance(exc, JsonRpcContentModified):  # (moved on: expected)
        log.error("a pull's check failed", exc_info=exc)


def refresh_pull(ls: ShapeScriptServer):
    try:
        ls.workspace_diagnostic_refresh(None)
    except Exception as exc:  # the client may not answer
        ls.report_failure("diagnostic refresh", exc)


def recheck_all(ls: ShapeScriptServer):
    """After settings or files on disk change: every open document again."""
    ls.generation += 1
    ls.submit("invalidate", ls.ws.invalidate)
    if not ls.docs.by_uri:
        return
    if ls.push:
        for doc in ls.docs:
            schedule_check(ls, doc.uri)
    elif ls.client_supports("workspace.diagnostics.refresh_support", False):
        refresh_pull(ls)


def stale_version(ls: ShapeScriptServer, uri: str, version) -> bool:
    """A change whose version is not after the document's (LSP's versions only go up):
    ignored, with a warning in the log, rather than applied to a text it wasn't made on."""
    have = ls.docs.version(uri)
    if version is None or have is None or version > have:
        return False
    message = f"shapescript: ignored a change to {uri} at version {version}: the document is at version {have}"
    log.warning("%s", message)
    ls.window_log_message(T.LogMessageParams(type=T.MessageType.Warning, message=message))
    return True


def register(ls: ShapeScriptServer):
    @ls.feature(T.TEXT_DOCUMENT_DID_OPEN)
    @guarded("notification")
    def did_open(ls: ShapeScriptServer, params: T.DidOpenTextDocumentParams):
        td = params.text_document
        ls.docs.open(td.uri, td.text, td.version)
        ls.update_access()  # with no workspace folders, the document's folder may be read
        ls.replayed.pop(td.uri, None)
        ls.kept_pull.pop(td.uri, None)
        _unchecked(ls).opened(td.uri)
        if not show_kept(ls, td.uri):  # an earlier session's diagnostics of this very text, at once
            show_first_lines(ls, td.uri)  # else a large file's first syntax errors
        schedule_check(ls, td.uri)

    @ls.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    @guarded("notification")
    def did_change(ls: ShapeScriptServer, params: T.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        if stale_version(ls, uri, params.text_document.version):
            return
        if ls.docs.change(uri, params.content_changes, params.text_document.version) is not None:
            _shown_early(ls, uri, params.text_document.version)
            schedule_check(ls, uri)

    @ls.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    @guarded("notification")
    def did_close(ls: ShapeScriptServer, params: T.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        doc = ls.docs.close(uri)
        if doc is None:
            return
        ls.update_access()
        ls.generation += 1
        ls.published.pop(uri, None)
        ls.replayed.pop(uri, None)
        ls.kept_pull.pop(uri, None)
        _unchecked(ls).discard(uri)
        ls.published_from.pop(doc.path, None)
        ls.pending.pop(doc.path, None)
        if ls.push:
            ls.text_document_publish_diagnostics(
                T.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=doc.version))
        path = doc.path

        def job():
            importers = ls.ws.importers(path)  # before closing: the open files that see it
            ls.ws.close(path)
            for other in importers:
                if ls.push:
                    republish(ls, other)

        ls.submit("close", job)

    @ls.feature(T.TEXT_DOCUMENT_DIAGNOSTIC,
                T.DiagnosticOptions(identifier="shapescript", inter_file_dependencies=True,
                                    workspace_diagnostics=False))
    @guarded("request")
    async def pull_diagnostics(ls: ShapeScriptServer, params: T.DocumentDiagnosticParams):
        uri = params.text_document.uri
        path, text, version = ls.snapshot(uri)
        result_id = f"{ls.generation}"

        def answer(path):
            a = ls.ws.analyze(path)
            items = convert.diagnostics(a.diags if a else [], path, ls.lines_for, ls.docs.uri_for, ls.docs.version)
            return items, (_record(ls, a, path) if text is not None else None)

        if params.previous_result_id == result_id:
            return T.UnchangedDocumentDiagnosticReport(result_id=result_id)
        def from_kept():
            """The kept answer of this version: at a first pull, or an edit's early list at any."""
            kept = ls.kept_pull.get(uri)
            if kept is None or kept[0] != version or (params.previous_result_id is not None and len(kept) < 4):
                return None
            try:
                items = ls.protocol._converter.structure(kept[1], list[T.Diagnostic])
            except Exception as exc:  # a kept entry the server wouldn't make: answer from the check
                log.warning("kept diagnostics of %s not used: %r", uri, exc)
                ls.kept_pull.pop(uri, None)
                return None
            kept[2] = True  # answered before the check: it asks for a new pull if it differs
            return T.RelatedFullDocumentDiagnosticReport(items=items, result_id=f"kept-{result_id}")

        got = from_kept()
        if got is not None:
            return got
        # the check's answer, or the early list of an edit typed during the first check
        # (_early_pull) if that comes first
        core = asyncio.ensure_future(ask_core(ls, (path, text, version), answer, missing=([], None)))
        waiter = asyncio.get_running_loop().create_future()
        ls.pull_waiters.setdefault((uri, version), []).append(waiter)
        try:
            await asyncio.wait({core, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiters = ls.pull_waiters.get((uri, version), [])
            if waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del ls.pull_waiters[(uri, version)]
        if not core.done():
            got = from_kept()
            if got is not None:
                core.add_done_callback(_log_failure)  # the check goes on: its answer is not awaited
                return got
        items, record = await core
        if record is not None and ls.docs.version(uri) == version:
            as_json = ls.to_json(items)
            ls.published[uri] = (version, as_json)
            _keep_later(ls, uri, version, as_json, record)
        return T.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)
