"""Files, imports and the incremental cache: the "database" every tool asks.

Parsed items are reused by their text. A model's fields, a function's signature and a
function body's check are cached per item, with the meaning of each name the check read
(`reads.py`): an edit re-checks the edited item and the items that read a name whose
meaning changed, nothing else. The caches hold entries for the items that exist now: an
item replaced by an edit, or in a file closed or changed on disk, is forgotten.

The Workspace is split by concern (rust-analyzer's base-db and ide-db): the file store
(`file_store.py`), its inputs (`inputs.py`), the import graph (`import_graph.py`),
interface keys and the early cutoff (`interfaces.py`), the per-file analysis
(`analysis.py`, `declare.py`) and the caches' upkeep (`caches.py`). Each part is a class
of its own over the one state `Workspace.__init__` sets up: they read each other's
caches on every keystroke, so they share it rather than pass it.
"""
from __future__ import annotations

from ..files import Access, Refusal
from ..program_db import Inputs
from ..program_view import ProgramView
from .file_store import FileStore
from .inputs import Configured
from .import_graph import ImportGraph
from .interfaces import Interfaces
from .caches import Caches
from .analysis import Analyzer
from .declare import Declaring
from .results import Analysis, FileEnv
from .file_store import RECENT
from .source_file import Cancelled, SourceFile

__all__ = ["Analysis", "Cancelled", "FileEnv", "RECENT", "SourceFile", "Workspace"]


class Workspace(FileStore, Configured, ImportGraph, Interfaces, Caches, Analyzer, Declaring):
    """Files, imports and the incremental cache: the "database" every tool asks."""

    def __init__(self, dim_overrides: dict | None = None, access: Access | None = None):
        self.files: dict[str, SourceFile] = {}
        # what may be read from disk (files.py): the size limit, and the server's workspace folders
        self.access = access or Access()
        self._refused: dict[str, Refusal] = {}  # path -> why it was not read, last time it was asked
        self.open: set[str] = set()
        self._inputs = Inputs(dims=dict(dim_overrides or {}))  # what every analysis is asked (program_db.py)
        self.program = ProgramView(self)  # what the layers below see of this workspace
        self._model_cache: dict = {}
        self._sig_cache: dict = {}
        self._body_cache: dict = {}
        self._analysis: dict = {}  # path -> Analysis, reused while _still_valid says so
        self._iface: dict = {}  # path -> (SourceFile, its items, interface key, name -> item)
        self._work: dict = {}  # path -> {"analyses": n, "items": n}: the checks each file's analysis ran
        self._analyzing: list = []  # the analyses under way (an import's, inside its importer's)
        self._reads_stack: list = []  # per analysis under way: the imported bodies it read
        self._read_open: list = []  # per analysis under way: whether it read the set of open files
        # path -> Declared of its last analysis: reused while its interface and the closure's
        # are the same (an edit in a body), or by name (`_analyze`)
        self._decl_prev: dict = {}
        self._imported: dict = {}  # path -> what its imports declare (_analyze), per version of their items
        self._meanings: dict = {}  # path -> Meanings of its last analysis (answers carried over)
        self._cycles: dict = {}  # path -> (the body results, E0207 diagnostics) of its last analysis
        self._model_cycles: dict = {}  # path -> (the models, E0211 diagnostics) of its last analysis
        self._disk: dict = {}  # path -> (mtime, SourceFile)
        self._root_of: dict = {}  # (folder, roots) -> its project root (imports.py); forgotten with the analyses
        self._use_parse_cache = False  # the language server: a file opened cold reuses saved items
        self._roots: list = []  # the project's folders (the editor's workspace folders):
        # where the IDE queries across files look for files that are not open (ide/project.py)
        self._export_checking: set = set()  # paths whose export checks are running now
        self._recent: list = []  # the files set_text changed last, the latest last (trim keeps them whole)
        self._slim_env: dict = {}  # path -> _EnvHolder: the environment its slimmed results are restored with
        self._plain: dict = {}  # path -> (its NameMap, the same as a dict): _plain_names
        self._items_errors: dict = {}  # path -> (its items, their NameMap, their errors): _item_errors
