"""Settings: `shapescript.toml` at the workspace root, overridden by the editor's
settings (section `shapescript`, fetched with workspace/configuration); also the
initialize handshake and file watching."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Optional

from lsprotocol import types as T

from shapescript_core.settings import FILE_NAME, load_config, parse_settings

from .diagnostics import recheck_all
from .guard import guarded
from .roots import root_from, roots_from

if TYPE_CHECKING:
    from .app import ShapeScriptServer

SECTION = "shapescript"


def apply_config(ls: ShapeScriptServer, client_settings=None, force: bool = False, refresh: bool = True):
    """Merge the file's and the client's settings; re-check the open files if the
    checks' inputs changed (and ask the client to refresh lenses and hints, unless
    `refresh` is off: no requests before the initialize answer)."""
    if client_settings is not None:
        ls.client_settings = client_settings
    cfg = load_config(ls.root).merged(parse_settings(getattr(ls, "client_settings", None), "settings"))
    old = ls.config
    ls.config = cfg
    ls.update_access()  # the size limit may have changed
    if cfg.problems and cfg.problems != old.problems:
        ls.show("shapescript: " + "; ".join(cfg.problems), T.MessageType.Warning)
    # dims, default targets, tensor-parallel ranks (E3307, `export.vllm.tensorParallel`)
    if not force and cfg.check_inputs() == old.check_inputs():
        return
    ls.submit("settings", lambda: cfg.apply_to(ls.ws))
    recheck_all(ls)
    if not refresh:
        return
    if ls.client_supports("workspace.code_lens.refresh_support", False):
        ls.workspace_code_lens_refresh(None)
    if ls.client_supports("workspace.inlay_hint.refresh_support", False):
        ls.workspace_inlay_hint_refresh(None)


async def fetch_client_settings(ls: ShapeScriptServer):
    if not ls.client_supports("workspace.configuration", False):
        return None
    try:
        values = await asyncio.wait_for(ls.workspace_configuration_async(
            T.ConfigurationParams(items=[T.ConfigurationItem(section=SECTION)])), 5)
    except Exception as exc:
        ls.report_failure("workspace/configuration", exc)
        return None
    return values[0] if values else None


def register(ls: ShapeScriptServer):
    @ls.feature(T.INITIALIZE)
    @guarded("notification")
    def initialize(ls: ShapeScriptServer, params: T.InitializeParams):
        ls.loop = asyncio.get_running_loop()
        ls.root = root_of(params)
        ls.roots = roots_of(params)
        ls.ws.set_roots(ls.roots)  # the project's files, for rename and references; the imports' root (imports.py)
        opts = params.initialization_options
        ls.init_options = opts if isinstance(opts, dict) else {}
        apply_config(ls, ls.init_options.get("settings"), force=True, refresh=False)

    @ls.feature(T.INITIALIZED)
    @guarded("notification")
    async def initialized(ls: ShapeScriptServer, params: T.InitializedParams):
        if ls.client_supports("workspace.did_change_watched_files.dynamic_registration", False):
            watchers = [T.FileSystemWatcher(glob_pattern="**/*.ss"),
                        T.FileSystemWatcher(glob_pattern=f"**/{FILE_NAME}")]
            await ls.client_register_capability_async(T.RegistrationParams(registrations=[T.Registration(
                id="shapescript-files", method=T.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=T.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
        settings = await fetch_client_settings(ls)
        if settings is not None:
            apply_config(ls, settings)

    @ls.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded("notification")
    async def did_change_configuration(ls: ShapeScriptServer, params: T.DidChangeConfigurationParams):
        settings = await fetch_client_settings(ls)
        if settings is None and isinstance(params.settings, dict):
            settings = params.settings.get(SECTION, params.settings)
        apply_config(ls, settings if settings is not None else {})

    @ls.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded("notification")
    def did_change_watched_files(ls: ShapeScriptServer, params: T.DidChangeWatchedFilesParams):
        if any(c.uri.endswith("/" + FILE_NAME) for c in params.changes):
            apply_config(ls)
        if any(c.uri.endswith(".ss") for c in params.changes):
            recheck_all(ls)  # a file on disk that open files import may have changed

    @ls.feature(T.TEXT_DOCUMENT_DID_SAVE)
    @guarded("notification")
    def did_save(ls: ShapeScriptServer, params: T.DidSaveTextDocumentParams):
        apply_config(ls)  # clients that watch no files: pick up shapescript.toml on save


def roots_of(params: T.InitializeParams) -> list:
    """Every workspace folder (else rootUri, else rootPath): what the server may read."""
    return roots_from([f.uri for f in params.workspace_folders or ()], params.root_uri, params.root_path)


def root_of(params: T.InitializeParams) -> Optional[str]:
    """The workspace's root folder: the first workspace folder, else rootUri, else rootPath."""
    return root_from([f.uri for f in params.workspace_folders or ()], params.root_uri, params.root_path)
