"""The server's answer to `initialize`, shipped with it, so that the first start of a
session answers before pygls is loaded (fast_start.py).

The answer is what pygls builds from the features the server registers, and it depends
on the client in three ways only (the rest of what pygls reads from the client concerns
features this server doesn't register, and positions are always UTF-16, app.Protocol):
- push or pull diagnostics (`diagnostic_push`, the one rule, also app.adjust_capabilities's);
- `renameProvider`: options only for a client that says `prepareSupport`;
- `willSave` and `willSaveWaitUntil`: false when the client says them (`_with_save_flags`).
`initialize_answers.json` holds the answer for each of the four, made by the server
itself (`scripts/initialize_answers.py` writes it; tests/test_initialize_answer.py checks
it against the server's own answer for many clients, the installed pygls's included). It
is used only with the pygls and lsprotocol it was made with; the server compares its own
answer with the one sent and logs an error if they ever differ (app.Protocol).
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
from typing import Optional

log = logging.getLogger("shapescript.server")

FORMAT = 1
ANSWERS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "initialize_answers.json")
LIBRARIES = ("pygls", "lsprotocol")  # what builds the answer: it is used only with these versions
_loaded: Optional[dict] = None


def _get(obj, *keys):
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def diagnostic_push(mode, can_pull: bool, can_refresh: bool) -> bool:
    """Whether the server pushes diagnostics (publishDiagnostics) rather than answering
    pulls. Diagnostics depend on imported files, so pull needs the client to refresh on
    request (`workspace.diagnostics.refreshSupport`); a client that can pull but not
    refresh (Neovim 0.11) gets pushes. `initializationOptions.diagnosticMode` ("push",
    "pull") overrides the choice."""
    if mode == "push":
        return True
    if mode == "pull":
        return False
    return not (can_pull and can_refresh)


def variant(params) -> Optional[str]:
    """The name of the answer a client with these initialize params gets; None for
    params that are not an object with `capabilities` an object (the server answers
    those itself: with an error)."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict) or "processId" not in params:
        return None
    caps = params["capabilities"]
    opts = params.get("initializationOptions")
    mode = opts.get("diagnosticMode", "auto") if isinstance(opts, dict) else "auto"
    push = diagnostic_push(mode, _get(caps, "textDocument", "diagnostic") is not None,
                           bool(_get(caps, "workspace", "diagnostics", "refreshSupport")))
    prepare = bool(_get(caps, "textDocument", "rename", "prepareSupport"))
    return f"{'push' if push else 'pull'}{' prepareRename' if prepare else ''}"


def installed_version(name: str) -> Optional[str]:
    """An installed distribution's version, from its .dist-info folder's name beside the
    package (importlib.metadata reads every distribution on the path: ~0.3 s)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    prefix = name + "-"
    try:
        for entry in os.listdir(site):
            if entry.startswith(prefix) and entry.endswith(".dist-info"):
                return entry[len(prefix):-len(".dist-info")]
    except OSError:
        return None
    return None


def libraries() -> dict:
    return {name: installed_version(name) for name in LIBRARIES}


def _answers() -> dict:
    """The shipped answers by variant; {} (logged) when the file is missing, damaged or
    made with other versions of pygls and lsprotocol than these."""
    global _loaded
    if _loaded is None:
        _loaded = {}
        try:
            with open(ANSWERS_FILE, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            log.warning("no shipped initialize answers (%s): the server answers", exc)
            return _loaded
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("answers"), dict):
            log.warning("%s is not a file of initialize answers: the server answers", ANSWERS_FILE)
        elif data.get("libraries") != libraries():
            log.info("initialize answers made with %s, installed %s: the server answers",
                     data.get("libraries"), libraries())
        else:
            _loaded = data["answers"]
    return _loaded


def shipped(params) -> Optional[dict]:
    """The answer (`InitializeResult` as JSON) for a client with these initialize
    params, or None: the server answers."""
    name = variant(params)
    answer = _answers().get(name) if name is not None else None
    if not (isinstance(answer, dict) and isinstance(answer.get("capabilities"), dict)):
        return None
    return _with_save_flags(answer, _get(params["capabilities"], "textDocument", "synchronization"))


def _with_save_flags(answer: dict, sync) -> dict:
    """pygls answers `willSave` (and `willSaveWaitUntil`) with the client's flag `and`
    whether the server handles it: absent when the client doesn't say, else false (this
    server handles neither; tests/test_initialize_answer.py fails if it ever does)."""
    said = [k for k in ("willSave", "willSaveWaitUntil") if _get(sync, k) is not None]
    if not said:
        return answer
    caps = answer["capabilities"]
    return {**answer, "capabilities": {**caps, "textDocumentSync": {**caps["textDocumentSync"],
                                                                   **{k: False for k in said}}}}
