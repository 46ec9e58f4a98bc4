"""Files, imports and the incremental cache: the "database" every tool asks.

Parsed items are reused by their text. A model's fields, a function's signature and a
function body's check are cached per item, with the meaning of each name the check read
(`reads.py`): an edit re-checks the edited item and the items that read a name whose
meaning changed, nothing else. The caches hold entries for the items that exist now: an
item replaced by an edit, or in a file closed or changed on disk, is forgotten.
"""
from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import hashlib
import operator
import os
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from .diagnostics import error, warning
from .files import Access, ReadRefused, Refusal, check_path, read_bytes
from .check.env import DimTable, is_dim_item as _is_dim, ModelInfo, Signature, build_model, build_signature, model_cycles, \
    reachable_models
from .check.function import FnResult, check_function
from .check.graphs import components as _components, reached as _reached_from, shortest_path as _path
from .check.messages import defined_twice, import_missing, import_not_utf8, import_outside, import_unreadable
from .check.sizes import Size
from .check.types import TensorT, Type, render_nested
from .serving.entry import export_diagnostics
from .imports import import_problem, project_root, resolve_import
from .declarations import Declarations
from .reads import DimsView, EnvView, Meanings, ModelNames
from .syntax import ast as A
from .syntax import parse_cache
from .syntax.names import NameMap, without_simple_dims
from .syntax.parser import changed_range, parse_file, reparse_file, syntax_errors
from .syntax.source import LineIndex, decode_source, normalize_newlines, shifted
from .program_db import Inputs
from .program_view import ProgramView
from .targets import export_targets, exported, unknown_targets


@contextlib.contextmanager
def _no_gc():
    """Parsing and checking allocate many small objects and no cycles worth collecting
    on the way: pausing the cycle collector meanwhile cuts the time by a third. Once the
    batches since the last freeze made many objects (a cold parse; a cold open's bodies,
    parsed and checked a file at a time), what was made is frozen out of the
    collector's sight, so neither re-enabling it nor later keystrokes walk the whole
    syntax tree."""
    enabled = gc.isenabled()
    gc.disable()
    start = gc.get_count()[0]
    try:
        yield
    finally:
        _made[0] += max(0, gc.get_count()[0] - start)
        if _made[0] > FREEZE_AFTER:
            gc.freeze()
            _made[0] = 0
        if enabled:
            gc.enable()


FREEZE_AFTER = 100_000  # objects made by the batches since the last freeze
_made = [0]  # (a nested batch counts twice: it freezes sooner, which is harmless)


# unknown names, types, callees and free dims in fields: with an import missing, the
# missing file may well define them
UNRESOLVED_NAME_CODES = {"E0201", "E0202", "E0205"}


class Cancelled(Exception):
    """An analysis stopped because its caller no longer wants it (`analyze(cancelled=…)`)."""


class SourceFile:
    decode_error: Optional[str] = None  # read from disk, not UTF-8: where the first bad byte is
    _imports: Optional[tuple] = None  # (items, root, [(ImportItem, path)]): Workspace._import_targets

    def __init__(self, path: str, text: str, version: Optional[int] = None, cached: bool = False,
                 interface: bool = False):
        """`interface`: functions parsed at interface depth (parser.parse_interface), their
        bodies when read: a file read for what it declares (an import) parses about a
        third of its text; its check reads, so parses, all of them."""
        self.path = path
        self.version = version
        self.text = ""
        self.items: list[A.Item] = []
        self.lines = LineIndex("")
        if cached:  # the items saved for this path by an earlier session, reused by their text
            text = normalize_newlines(text)
            with _no_gc():
                self.items = parse_file(text, path, parse_cache.load(path), interface)
            self.lines = LineIndex(text)
            self.text = text
        else:
            self.set_text(text, version, interface)

    def set_text(self, text: str, version: Optional[int] = None, interface: bool = False):
        text = normalize_newlines(text)  # a bare \r ends a line, as in LSP: same offsets
        with _no_gc():
            self.items = reparse_file(self.items, self.text, text, self.path, interface)
        self.lines = _lines_after(self.text, self.lines, text)
        self.text = text
        self.version = version


def _lines_after(old: str, lines: LineIndex, text: str) -> LineIndex:
    """The line index of `text`, from the one of `old`: an edit that neither removes nor
    adds a line break keeps the line starts (shifted after it), without a rescan and,
    for a same-length edit (a typed-over character), without a new list."""
    if not old or not lines.starts:
        return LineIndex(text)
    p, old_end, new_end = changed_range(old, text)
    gone, added = old[p:old_end], text[p:new_end]
    if "\n" in gone or "\r" in gone or "\n" in added or "\r" in added or \
            (p > 0 and old[p - 1] == "\r"):
        return LineIndex(text)
    delta = new_end - old_end
    starts = lines.starts
    if delta:
        starts = shifted(starts, bisect.bisect_right(starts, p), delta)
    out = LineIndex.__new__(LineIndex)
    out.text, out.starts = text, starts
    return out


class FileEnv:
    """What the checker of one file sees."""

    def __init__(self, dims: DimTable, models: dict, sigs: dict, broken: set):
        self.dims = dims
        self.models = models
        self.sigs = sigs
        self.broken = broken
        self._model_names = set(models) | {n for n, k in broken if k == "model"}

    def dim(self, name: str) -> Optional[Size]:
        return self.dims.canon(name) if self.dims.is_dim(name) else None

    def dim_names(self) -> list:
        return list(self.dims.items)

    def model(self, name: str) -> Optional[ModelInfo]:
        return self.models.get(name)

    def model_names(self) -> set:
        return self._model_names

    def sig(self, name: str) -> Optional[Signature]:
        return self.sigs.get(name)

    def fn_names(self) -> list:
        return list(self.sigs)

    def is_broken_name(self, name: str) -> bool:
        return any(n == name for n, _ in self.broken)

    def render(self, t: Type, dtype: bool = False) -> str:
        return render_nested(t, lambda x: self._render_one(x, dtype))

    def _render_one(self, t: Type, dtype: bool) -> str:
        if isinstance(t, TensorT):
            s = "[" + " ".join(self.dims.render(a.name) for a in t.axes) + "]"
            if dtype:
                s += " " + t.dtype.render(self.dims.render)
            return s
        if hasattr(t, "name") and t.kind == "model":
            return t.name
        if t.kind == "stack":
            return f"[{self.dims.render(t.count)}] {t.model}"
        if t.kind == "scalar":
            return "[] " + ("f32" if t.num == "float" else "i64" if t.num == "int" else "bool")
        if t.kind == "dtype":
            return t.dtype.name
        return "?"


@dataclass
class Analysis:
    """Everything known about one file after checking."""

    path: str
    file: SourceFile
    env: FileEnv
    diags: list
    fns: dict = field(default_factory=dict)  # name -> FnResult (this file's functions)
    own: dict = field(default_factory=dict)  # name -> item (this file's named items)
    visible: dict = field(default_factory=dict)  # name -> item (own and imported)
    imports: list = field(default_factory=list)  # resolved paths
    # what the analysis was made from (Workspace._still_valid): the file's items, the
    # interface of every file in its import closure, the imported functions whose
    # bodies it read (export checks, W0102), whether its fixes reach into importers
    items: list = field(default_factory=list)
    stamp: tuple = ()
    body_reads: list = field(default_factory=list)
    lists: dict = field(default_factory=dict)  # import path -> its items list when `visible` was made
    volatile: bool = False
    trimmed: bool = False  # Workspace.trim has slimmed its function results


class Declared(NamedTuple):
    """What a file's last analysis declared (Workspace._decl_prev), for the next one to
    take over while it holds (early cutoff by name, `_analyze`)."""

    own_key: tuple  # the file's own interface key
    closure: tuple  # ((path, interface key), ...) of its import closure
    imodels: dict  # name -> ModelInfo of the imported models
    isigs: dict  # name -> Signature of the imported functions
    lists: dict  # import path -> its items list
    own_items: Optional[list]  # the file's items, when its own declarations may be reused (no own name hides an import's)
    omodels: dict  # name -> ModelInfo of the file's own models
    osigs: dict  # name -> Signature of the file's own functions
    odiags: list  # the errors of the file's own declarations
    items: list  # the file's items
    dims: DimTable  # the dim table (reused with the same dim items)


class Workspace:
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

    # ------------------------------------------------------------ configuration
    @property
    def roots(self) -> list:
        """The project's folders (the editor's workspace folders)."""
        return list(self._roots)

    def set_roots(self, roots):
        if list(roots) == self._roots:
            return
        self._roots = list(roots)
        self._clear_analyses()  # the imports' project root may change with them (imports.py)

    def use_parse_cache(self, on: bool = True):
        """A file opened cold reuses the items saved by an earlier session (parse_cache.py)."""
        self._use_parse_cache = on

    @property
    def parse_cache_used(self) -> bool:
        return self._use_parse_cache

    @property
    def inputs(self) -> Inputs:
        """What every analysis is asked beside the texts: dims, targets, ranks, requests."""
        return self._inputs

    def set_inputs(self, inputs: Inputs) -> bool:
        """Replace the inputs; whether they changed (the analyses made with the old ones
        are then not reused)."""
        if inputs == self._inputs:
            return False
        self._inputs = inputs
        self._clear_analyses()
        return True

    @contextlib.contextmanager
    def using(self, inputs: Inputs):
        """Within the block, the analyses are made with `inputs`; the ones before come back."""
        saved = self._inputs
        self.set_inputs(inputs)
        try:
            yield
        finally:
            self.set_inputs(saved)

    @property
    def dim_overrides(self) -> dict:
        """NAME -> value, overriding the source's dims (`--dim`, the settings' [dims])."""
        return dict(self._inputs.dims)

    def set_dim_overrides(self, dims: dict) -> bool:
        """Replace the dim overrides; whether they changed."""
        return self.set_inputs(self._inputs.replace(dims=dict(dims)))

    def set_export_requests(self, requests: dict):
        """Explicit export checks, {path: [(fn name or None, {targets})]} (rule 3 of
        targets.py), replacing the previous ones."""
        self.set_inputs(self._inputs.replace(requests={self.norm(p): list(r) for p, r in requests.items()}))

    def export_requests_of(self, path: str) -> list:
        return self._inputs.requests_of(path)

    def export_request(self, path: str, fn: str, target: str):
        """Within the block, `fn` of `path` is checked for `target` only (an export's checks)."""
        path = self.norm(path)
        return self.using(self._inputs.replace(requests={**self._inputs.requests, path: [(fn, {target})]}))

    def set_default_targets(self, targets) -> bool:
        """The settings' targets for an unmarked `forward` (None: rule 2's); whether they changed."""
        return self.set_inputs(self._inputs.replace(default_targets=frozenset(targets) if targets else None))

    @property
    def default_targets(self) -> Optional[frozenset]:
        return self._inputs.default_targets

    def set_tensor_parallel(self, ranks) -> bool:
        """The ranks vLLM is to split `vllm` exports across (`[export.vllm] tensor_parallel`,
        `--tensor-parallel`; None or 1: no split), which E3307 checks; whether it changed."""
        return self.set_inputs(self._inputs.replace(tensor_parallel=int(ranks) if ranks else 1))

    @property
    def tensor_parallel(self) -> int:
        return self._inputs.tensor_parallel

    def exported(self, analysis) -> list:
        """[(FnItem, targets)] of an analysed file: the one rule (targets.py), with this
        workspace's requests and settings."""
        return export_targets(analysis.own, analysis.env, self._inputs.requests_of(analysis.path),
                              self._inputs.default_targets)

    def export_checks_running(self, path: str) -> bool:
        """Whether the export checks of `path` are running (Reach then leaves it alone)."""
        return path in self._export_checking

    @contextlib.contextmanager
    def export_checks_of(self, path: str):
        """Marks `path`'s export checks as running; yields False when they already were
        (an import cycle reached the file again)."""
        if path in self._export_checking:
            yield False
            return
        self._export_checking.add(path)
        try:
            yield True
        finally:
            self._export_checking.discard(path)

    # ------------------------------------------------------------ files
    @staticmethod
    def norm(path: str) -> str:
        return os.path.normpath(os.path.abspath(path))

    def set_text(self, path: str, text: str, version: Optional[int] = None, interface: bool = False) -> SourceFile:
        """An open file's text (`interface`: its items parsed at interface depth, its
        function bodies when its check reads them: SourceFile)."""
        path = self.norm(path)
        f = self.files.get(path)
        if f is None:
            disk = self._disk.pop(path, None)
            if disk is not None and disk[1].decode_error is None:
                # read from disk already (an open file imports it): the editor's text from
                # that parse, only the items that differ parsed again (a restored session
                # opens the files an open one imports, once each, not twice)
                f = disk[1]
                before = f.items
                f.set_text(text, version, interface)
                self._forget(before, keep=f.items)
            else:
                if disk is not None:
                    self._forget(disk[1].items)
                f = SourceFile(path, text, version, cached=self._use_parse_cache, interface=interface)
            self.files[path] = f
        else:
            before = f.items
            f.set_text(text, version, interface)
            self._forget(before, keep=f.items)
        self.open.add(path)
        self._drop(path)
        if path in self._recent:
            self._recent.remove(path)
        self._recent.append(path)
        del self._recent[:-RECENT]
        return f

    def trim(self) -> int:
        """Memory: the analysed files but the RECENT ones last changed keep only what
        their importers and their own next check read. Each function's per-node check
        detail is freed (FnResult.slim) and its body's statements too (FnItem.drop_body);
        a later read of either (hover, an export, a body to check again) parses that body
        again from its text and checks it with the file's environment. The functions an
        export of the file reaches stay whole (the export checks read them at every
        analysis). A body read since (a search, a hover) in a file read only for what it
        declares (not open, not analysed) is dropped again: such a file keeps its
        interface. How many functions it slimmed (each analysis is trimmed once)."""
        keep = set(self._recent)
        slimmed = 0
        if A.parsed_again:
            # dropped bodies were read since (a search across the files, a body checked
            # again): those of results still slimmed, in files trimmed before, go again
            items = A.parsed_again[:]
            del A.parsed_again[:]
            for item in items:
                a = self._analysis.get(item.path)
                if a is None and item.path not in self.open:
                    item.drop_body()  # a file read for what it declares: its interface is what stays
                    continue
                res = a.fns.get(item.name) if a is not None and a.trimmed and item.path not in keep else None
                if res is not None and res.item is item and res.slimmed:
                    item.drop_body()
        for path, a in list(self._analysis.items()):
            if a.trimmed or path in keep:
                continue
            a.trimmed = True
            env, fns = a.env, a.fns
            holder = self._slim_env.get(path)
            if holder is None:
                holder = self._slim_env[path] = _EnvHolder()
            # the results slimmed before and still in this analysis hold under its
            # environment too (their reads mean the same): they are restored with it
            holder.env = env
            whole = _reached(fns, [it.name for it, _ in self.exported(a)])
            for name, res in fns.items():
                if res.slimmed:
                    continue
                item = res.item
                sig = env.sigs.get(name)
                if name in whole or sig is None or a.own.get(name) is not item:
                    continue
                res.slim(holder, sig)
                item.drop_body()
                slimmed += 1
        return slimmed

    def syntax_diagnostics(self, path: str) -> list:
        """The syntax and layout errors of an open file's items: known as soon as it is
        parsed, before any check (its function bodies parsed now, if they were not)."""
        f = self.files.get(self.norm(path))
        if f is None:
            return []
        with _no_gc():
            return syntax_errors(f.items)

    def save_parse_cache(self, path: str) -> bool:
        """Keep an open file's parsed items on disk for the next session (parse_cache.py)."""
        f = self.files.get(self.norm(path))
        return f is not None and parse_cache.save(f.path, f.items)

    def invalidate(self, path: str | None = None):
        """Forget file-level results (item-level caches stay valid on their own)."""
        self._clear_analyses()
        self._root_of.clear()

    def close(self, path: str):
        path = self.norm(path)
        self.open.discard(path)
        if path in self._recent:
            self._recent.remove(path)
        self._slim_env.pop(path, None)
        self._plain.pop(path, None)
        self._items_errors.pop(path, None)
        f = self.files.pop(path, None)
        if f is not None:
            self._forget(f.items)
        self._meanings.pop(path, None)
        self._cycles.pop(path, None)
        self._model_cycles.pop(path, None)
        self._iface.pop(path, None)
        self._decl_prev.pop(path, None)
        self._imported.pop(path, None)
        self._drop(path, closure=True)

    def _clear_analyses(self):
        self._analysis.clear()
        self._decl_prev.clear()
        self._imported.clear()

    def _drop(self, path: str, closure: bool = False):
        """Forget the analysis of `path`, the analyses whose fixes reach into other files
        (E3306's calls to reorder), and with `closure` those that import `path`. The
        other importers of an edited file are looked at again when asked
        (`_still_valid`: early cutoff when its interface stayed the same)."""
        self._analysis.pop(path, None)
        for p, a in list(self._analysis.items()):
            if a.volatile or (closure and any(q == path for q, _ in a.stamp)):
                del self._analysis[p]

    def file(self, path: str) -> Optional[SourceFile]:
        """An open file, or the file on disk read through `files.read_bytes` (regular,
        bounded, inside `access.roots`); None when it can't be read: `refusal(path)`
        says why."""
        path = self.norm(path)
        f = self.files.get(path)
        if f is not None:
            return f
        target, refusal = check_path(path, self.access)
        if refusal is None:
            try:
                st = os.stat(target)
            except OSError:
                st = None
                refusal = Refusal(path, "missing", "no such file")
        if refusal is not None:
            return self._refuse(path, refusal)
        cached = self._disk.get(path)
        if cached and cached[0] == (st.st_mtime_ns, st.st_size, st.st_ino) and st.st_size <= self.access.limit:
            return cached[1]
        try:
            data = read_bytes(path, self.access)
        except ReadRefused as e:
            return self._refuse(path, e.refusal)
        text, sf_problem = decode_source(data)
        # read for what it declares: its functions' bodies parsed when read (by a check of
        # it, a search, a hover); the server: saved items reused
        sf = SourceFile(path, text, cached=self._use_parse_cache, interface=True)
        sf.decode_error = sf_problem  # not UTF-8: E0210 at the import that reads it
        if cached:
            self._forget(cached[1].items)
        self._disk[path] = ((st.st_mtime_ns, st.st_size, st.st_ino), sf)
        self._refused.pop(path, None)
        return sf

    def set_access(self, access: Access):
        """A new reading boundary (the server's folders, the size limit): every file read
        from disk is looked at again."""
        if access == self.access:
            return
        self.access = access
        self._refused.clear()
        self._clear_analyses()

    def _refuse(self, path: str, refusal: Refusal) -> None:
        cached = self._disk.pop(path, None)
        if cached:
            self._forget(cached[1].items)
        self._refused[path] = refusal
        return None

    def refusal(self, path: str) -> Optional[Refusal]:
        """Why `file(path)` gave None the last time (kind "missing": it isn't there)."""
        return self._refused.get(self.norm(path))

    def _forget(self, items: list, keep: list = ()):
        """Drop the cache entries of items that no longer exist (all of `items` but the
        ones in `keep`, which an edit reused)."""
        # `items` keeps the old items alive meanwhile: no new object has one of their ids
        # (a simple dim is in no cache: a million of them make no set of a million ids)
        simple = A.DimItem
        gone = {id(it) for it in items if type(it) is not simple}.difference(map(id, keep))
        for k in gone:
            for cache in (self._model_cache, self._sig_cache, self._body_cache):
                cache.pop(k, None)

    def work_counts(self) -> dict:
        """{path: {"analyses": n, "items": n, "declarations": n}}: how many times each file
        was analysed, how many item checks (a model's fields, a function's signature or
        body) its analyses ran, and how many models and signatures, its own and its
        imports', they looked up (built or found in the cache), since the workspace was
        made (for tests and benchmarks)."""
        return {p: dict(w) for p, w in self._work.items()}

    def _count(self, kind: str, n: int = 1):
        if self._analyzing:
            w = self._work.setdefault(self._analyzing[-1], {"analyses": 0, "items": 0, "declarations": 0})
            w[kind] += n

    def note_body_read(self, item):
        """An analysis under way read the result of a function of another file (the
        export checks, W0102): it holds only while that function item stays the same."""
        if self._analyzing and item.path != self._analyzing[-1]:
            f = self.file(item.path)  # messages name its lines: they must stay too
            line = f.lines.line_of(item.offset) if f is not None else None
            self._reads_stack[-1].append((item.path, item.name, item, line))

    def interface(self, path: str):
        """What importers of `path` can see, as a comparable key: per item in order, its
        kind and declaration (a dim's or model's whole text, a function's decorators and
        signature, an import's line), and whether it parsed; not function bodies,
        comments between items or positions. None when the file can't be read."""
        return self._interface_entry(self.norm(path))[2]

    def _interface_entry(self, path: str):
        f = self.file(path)
        if f is None:
            return (None, None, ("unread", getattr(self.refusal(path), "kind", None)), {})
        e = self._iface.get(path)
        if e is not None and e[0] is f and e[1] is f.items:
            return e
        # one digest over every item's (kind, declaration, broken), in one pass: a file of a
        # million dims keeps no tuple per item; a separator and each part's length make the
        # encoding unambiguous
        digest = hashlib.blake2b(digest_size=20)
        for it in f.items:
            decl = it.text[:it.header_pos[1]] if isinstance(it, A.FnItem) else it.text.rstrip()
            part = f"{it.kind}\0{len(decl)}\0{decl}\0{int(it.broken)}\0"
            digest.update(part.encode("utf-8", "surrogatepass"))
        names = _first_of_each_name(f.items)
        e = (f, f.items, (f.decode_error, len(f.items), digest.digest()), names)
        self._iface[path] = e
        return e

    def _plain_names(self, path: str, names):
        """A file's name map (its interface entry's NameMap) as a plain dict, built once per
        map, for what dicts do in C (a merge, a disjointness test, a copy); the NameMap
        itself for a file of more than PLAIN_DIMS simple dims (syntax/names.py keeps no
        string per simple dim)."""
        e = self._plain.get(path)
        if e is not None and e[0] is names:
            return e[1]
        plain = names
        if not isinstance(names, dict) and len(names) - len(names.others()) <= PLAIN_DIMS:
            plain = dict(names.pairs())
        self._plain[path] = (names, plain)
        return plain

    def _still_valid(self, a: Analysis) -> bool:
        """Whether a file's last analysis still holds: the same items, every file of its
        import closure with the same interface (early cutoff: an edit inside a body of an
        import re-checks no importer), and every imported function body it read the same."""
        f = self.file(a.path)
        if f is not a.file or f.items is not a.items:
            return False
        moved = False
        for p, key in a.stamp:
            e = self._interface_entry(p)
            if e[2] != key:
                return False
            moved = moved or e[1] is not a.lists.get(p)
        for p, name, item, line in a.body_reads:
            e = self._interface_entry(p)
            if e[3].get(name) is not item or e[0].lines.line_of(item.offset) != line:
                return False
        if moved:
            self._refresh_visible(a)
        return True

    def _refresh_visible(self, a: Analysis):
        """An import changed inside a body: the same interface, but some of its items are
        new objects. The entries of the analysis's `visible` (what navigation and hover
        look up) that came from such a file are replaced by its current items."""
        visible = a.visible
        for p, _ in a.stamp:
            e = self._interface_entry(p)
            if e[1] is None or e[1] is a.lists.get(p):
                continue
            sigs = a.env.sigs
            for name, it in e[3].items():
                old = visible.get(name)
                if old is not None and old is not it and old.path == p:
                    visible[name] = it
                    # the same declaration, the current item (one not built yet: built from it)
                    sigs.repoint(name, old, it,
                                 lambda sig, old=old, it=it: dataclasses.replace(sig, item=it) if sig.item is old else sig)
            a.lists[p] = e[1]

    def cache_sizes(self) -> dict:
        """Entries in each item cache (for tests and benchmarks)."""
        return {"models": len(self._model_cache), "signatures": len(self._sig_cache),
                "bodies": len(self._body_cache)}

    def importers(self, path: str) -> list:
        """Open files that import `path`, directly or not."""
        path = self.norm(path)
        out = []
        for p in list(self.open):
            if p != path and path in self._import_closure(p):
                out.append(p)
        return out

    # ------------------------------------------------------------ imports
    def root_of(self, path: str) -> str:
        """The project root of the file `path` (imports.py): imports stay under it."""
        key = (os.path.dirname(path), tuple(self.roots))
        root = self._root_of.get(key)
        if root is None:
            root = self._root_of[key] = project_root(path, self.roots)
        return root

    def _import_targets(self, f: SourceFile, root: Optional[str] = None) -> list:
        """[(ImportItem, resolved path)] of the imports of `f` that name a ShapeScript file
        inside the project of `root` (None: of `f` itself), kept per version of its items;
        the others are E0213 and read nowhere."""
        root = root or self.root_of(f.path)
        known = f._imports
        if known is not None and known[0] is f.items and known[1] == root:
            return known[2]
        out = []
        for it in f.items:
            if isinstance(it, A.ImportItem) and import_problem(f.path, it.target, root) is None:
                out.append((it, resolve_import(f.path, it.target)))
        f._imports = (f.items, root, out)
        return out

    def import_closure(self, path: str, texts: Optional[dict] = None) -> list:
        """The files `path` imports, directly or through others (read from disk if need
        be). `texts`: {path: (text, version)} of editor texts, each taken at interface
        depth (`set_text`) when its file is reached and the workspace holds no text for it,
        instead of the file on disk."""
        return self._import_closure(self.norm(path), texts)

    def _import_closure(self, path: str, texts: Optional[dict] = None) -> list:
        seen: list = []
        stack = [path]
        root = self.root_of(path)
        while stack:
            p = stack.pop()
            if texts and p in texts and p not in self.files:
                self.set_text(p, *texts[p], interface=True)
            f = self.file(p)
            if f is None:
                continue
            for _, t in self._import_targets(f, root):
                if t not in seen and t != path:
                    seen.append(t)
                    stack.append(t)
        return seen

    def _import_cycle(self, start: str, first: str) -> Optional[list]:
        """A path of imports from `first` back to `start`, if there is one."""
        stack = [(first, [start, first])]
        seen = set()
        root = self.root_of(start)
        while stack:
            p, trail = stack.pop()
            if p == start:
                return trail
            if p in seen:
                continue
            seen.add(p)
            f = self.file(p)
            if f is None:
                continue
            for _, t in self._import_targets(f, root):
                stack.append((t, trail + [t]))
        return None

    # ------------------------------------------------------------ analysis
    def analyze(self, path: str, cancelled=None) -> Optional[Analysis]:
        """The analysis of a file. `cancelled()`, when given, is asked between function
        bodies: when it says True the analysis stops by raising `Cancelled` (what was
        checked so far stays cached)."""
        path = self.norm(path)
        a = self._analysis.get(path)
        if a is not None:
            if self._still_valid(a):
                return a
            del self._analysis[path]
        f = self.file(path)
        if f is None:
            return None
        closure = [p for p in self._import_closure(path) if p != path]
        stamp = tuple((p, self._interface_entry(p)[2]) for p in closure)
        lists = {p: self._interface_entry(p)[1] for p in closure}
        items = f.items
        self._analyzing.append(path)
        self._reads_stack.append([])
        w = self._work.setdefault(path, {"analyses": 0, "items": 0, "declarations": 0})
        w["analyses"] += 1
        try:
            with _no_gc():
                a = self._analyze(f, cancelled, (stamp, lists))
        finally:
            self._analyzing.pop()
            body_reads = self._reads_stack.pop()
        a.items, a.stamp, a.body_reads, a.lists = items, stamp, body_reads, lists
        a.volatile = any(d.code == "E3306" for d in a.diags)
        self._analysis[path] = a
        return a

    def diagnostics(self, path: str) -> list:
        a = self.analyze(path)
        return a.diags if a else []

    def _analyze(self, f: SourceFile, cancelled=None, stamp=None) -> Analysis:
        diags: list = []
        # this file's names, the first item of each: the map its interface entry already holds
        # (shared, never changed: a file of a million dims keeps one such map, not three)
        e = self._interface_entry(f.path)
        own: NameMap = e[3] if e[0] is f and e[1] is f.items else _first_of_each_name(f.items)
        diags.extend(self._item_errors(f, own))
        # imports
        imports = []
        root = self.root_of(f.path)
        for it in f.items:
            if isinstance(it, A.ImportItem):
                why = import_problem(f.path, it.target, root)
                if why is not None:
                    diags.append(import_outside(it, why))
        for it, target in self._import_targets(f, root):
            tf = self.file(target)
            if tf is None:
                why = self.refusal(target)
                diags.append(import_unreadable(it, why) if why is not None and why.kind != "missing"
                             else import_missing(it))
                continue
            if tf.decode_error is not None:
                diags.append(import_not_utf8(it, tf.decode_error))
                continue
            imports.append(target)
            cyc = self._import_cycle(f.path, target)
            if cyc is not None:
                names = " → ".join(os.path.basename(p) for p in cyc)
                diags.append(error("E0209", f"import cycle: {names}", it.span(it.pos), "this import is on the cycle"))
                continue
        closure = [t for t in self._import_closure(f.path) if t != f.path]
        lists = [self.file(t) for t in closure]
        lists = [tf.items for tf in lists if tf is not None]
        # what the imports declare, kept per version of their items: the visible names,
        # the dims, the broken names and the models among them
        imp = self._imported.get(f.path)
        changed = None  # the imported names whose item may differ from the last analysis's
        old_lists = imp[0] if imp is not None else ()
        if imp is None or len(imp[0]) != len(lists) or not all(map(operator.is_, imp[0], lists)):
            got = self._imported_since(imp, closure, lists)
            if got is not None:
                imp, changed = got
            else:
                ivisible: dict = {}
                for items in lists:
                    for it in items:
                        if it.name is not None:
                            ivisible.setdefault(it.name, it)
                imp = (lists, ivisible, *_declared(ivisible))
            self._imported[f.path] = imp
        else:
            changed = ()
        ivisible = imp[1]
        # an own name hides an import's (the views look the smaller map's names up in the
        # larger, in C: no set of all the names)
        plain = self._plain_names(f.path, own) if own is e[3] else own
        shadowed = not ivisible.keys().isdisjoint(plain.keys())
        if ivisible:
            visible = dict(ivisible)
            visible.update(plain)
        else:  # nothing imported: this file's own map, not a copy of it
            visible = own
        if shadowed:
            broken_kinds, models_declared = _declared(visible)
        else:  # the same as from `visible`: the imports' first, then this file's
            own_broken, own_models = _declared(plain)
            broken_kinds, models_declared = {**imp[2], **own_broken}, imp[3] | own_models
        own_key = self._interface_entry(f.path)[2]
        last = self._decl_prev.get(f.path)
        # this file's declarations are the same, and of the imports only the names in
        # `changed` (none: an edit in this file) have new items, none of them a dim or a
        # model that became something else or the reverse (`_imported_since`)
        cutoff = stamp is not None and last is not None and last.own_key == own_key and not shadowed \
            and changed is not None and (last.closure == stamp[0] or changed) \
            and tuple(last.lists) == tuple(stamp[1]) and all(map(operator.is_, last.lists.values(), old_lists))
        # dims: a view over `visible` (a dim that didn't parse is still a dim, of unknown
        # size: its uses raise nothing). With the same dim items as the last analysis, its
        # table: the same fingerprint object, which every read of all dims compares in one
        # step instead of a walk over every visible name
        if cutoff and _same_dims(last.items, f.items):
            dims = last.dims
            dims.rebind(visible)  # not the last version's map: it isn't kept alive beside this one
        else:
            dims = DimTable(visible, self._inputs.dims)
        if dims.diags:
            for it in own.values():
                diags.extend(dims.diags.get(id(it), []))
        broken = set(broken_kinds.items())
        model_names = models_declared | {n for n, k in broken if k == "model"}
        meanings = Meanings(dims, model_names, broken_kinds,
                            lambda: (dims.fingerprint, tuple(sorted((n, it.kind) for n, it in visible.items()))))
        prev = self._meanings.get(f.path)
        meanings.carry_decl(prev)
        decl = meanings.decl
        build_m = self._builder(self._model_cache, build_model, decl, dims, model_names)
        build_s = self._builder(self._sig_cache, build_signature, decl, dims, model_names)
        if cutoff:
            # every imported declaration but the changed names' reads dims and model names
            # that mean what they meant, so its model or signature is the last analysis's.
            # Only this file's items and the changed names are looked at (cutoff by name)
            imodels, isigs = last.imodels.copy(build_m), last.isigs.copy(build_s)
            names = []
            for n in changed:
                it = ivisible.get(n)
                if isinstance(it, (A.ModelItem, A.FnItem)):
                    names.append((n, it))
                else:
                    imodels.pop(n)
                    isigs.pop(n)
            self._declare(names, imodels, isigs, decl, dims, model_names, own, diags)
            if any(n not in last.imodels and n not in last.isigs for n, _ in names):
                # a name new to the imports: in the order of `visible`, as a whole analysis has them
                imodels, isigs = imodels.in_order(ivisible), isigs.in_order(ivisible)
            if last.own_items is f.items:
                # this file's items are the ones of the last analysis (an import changed, not
                # this file): their models, signatures and errors too, for the same reason
                omodels, osigs, odiags = last.omodels, last.osigs, last.odiags
                among = changed
            else:
                omodels, osigs, odiags = {}, {}, []
                self._declare(without_simple_dims(own).items(), omodels, osigs, decl, dims, model_names, own,
                              odiags)
                # (a simple dim is no model nor signature: not among them)
                among = (*changed, *without_simple_dims(own))
            models, sigs = imodels.merged(omodels), isigs.merged(osigs)
            meanings.models, meanings.sigs = models, sigs
            meanings.carry_full(prev, among)
            diags.extend(odiags)
        else:
            # this file's declarations now (their errors are its own); the imports' when
            # first read (declarations.py): a file reads a few of the thousands it sees
            morder, sorder = {}, {}
            for n, it in without_simple_dims(visible).items():
                if isinstance(it, A.ModelItem):
                    morder[n] = it
                elif isinstance(it, A.FnItem):
                    sorder[n] = it
            omodels, osigs, odiags = {}, {}, []
            self._declare(without_simple_dims(own).items(), omodels, osigs, decl, dims, model_names, own, odiags)
            diags.extend(odiags)
            mbuilt, sbuilt = dict(omodels), dict(osigs)
            models, sigs = Declarations(morder, mbuilt, build_m), Declarations(sorder, sbuilt, build_s)
            # the imports' alone, sharing what is built (Declarations.get looks in its own names only)
            imodels = Declarations({n: it for n, it in morder.items() if n not in omodels}, mbuilt, build_m)
            isigs = Declarations({n: it for n, it in sorder.items() if n not in osigs}, sbuilt, build_s)
            meanings.models, meanings.sigs = models, sigs
            meanings.carry_full(prev)
        if stamp is not None:
            # what the next analysis may take over: the imports' models and signatures, and
            # (for the same items, in the order a whole analysis gives them: not with an own
            # name hiding an import's) this file's, with their errors
            self._decl_prev[f.path] = Declared(own_key, stamp[0], imodels, isigs, stamp[1],
                                               None if shadowed else f.items, omodels, osigs, odiags, f.items,
                                               dims)
        self._meanings[f.path] = meanings
        env = FileEnv(dims, models, sigs, broken)
        diags.extend(self._model_cycles_of(f.path, models, own))
        fns: dict = {}
        full, bodies = meanings.full, self._body_cache
        for n, it in without_simple_dims(own).items():
            if isinstance(it, A.FnItem):
                e = bodies.get(id(it))  # _body's reuse, inline: this loop sees every function
                if e is not None and e[0] is it and e[1] == full[n][3] and \
                        (e[2][0] is None or e[2][0](full) == e[2][1]):
                    res = e[3]
                else:
                    if cancelled is not None and cancelled():
                        raise Cancelled(f.path)
                    res = self._body(it, sigs[n], env, meanings)
                fns[n] = res
                if res.diags:
                    diags.extend(res.diags)
        diags.extend(self._cycles_of(f.path, fns, own))
        if any(d.code == "E0210" for d in diags):
            # names the missing file would define are not this file's mistakes
            diags = [d for d in diags if d.code not in UNRESOLVED_NAME_CODES]
        for it in without_simple_dims(own).values():
            if isinstance(it, A.FnItem) and it.decorators:
                diags.extend(unknown_targets(it))
        diags.extend(self._unread_fields(f, own, env, fns, models))
        a = Analysis(f.path, f, env, diags, fns, own, visible, imports)
        a.diags.extend(export_diagnostics(self.program, a))
        return a

    def _item_errors(self, f: SourceFile, own) -> list:
        """The syntax and layout errors of a file's items and its names defined twice,
        kept per version of its items: a file re-analysed because an import changed (an
        interface edit's dependents) doesn't walk its items again."""
        known = self._items_errors.get(f.path)
        if known is not None and known[0] is f.items and known[1] is own:
            return known[2]
        out = syntax_errors(f.items)
        for i, it in enumerate(f.items):
            first = own.earlier(i, it)
            if first is not None:
                out.append(defined_twice(it.span(it.name_pos), it.name, first.span(first.name_pos))
                           .help(f"rename one of the two `{it.name}`"))
        self._items_errors[f.path] = (f.items, own, out)
        return out

    def _imported_since(self, imp, closure: list, lists: list):
        """(what the imports declare now, the names whose item changed) from `imp`, what
        they declared at the last analysis, when the only differences are a few items of
        the same files (by identity: the items an edit left alone are the same objects)
        and none of them is a dim, an item with no name, or a model that became something
        else or the reverse (those change what every declaration may read: the caller
        then builds it all again). None when it can't tell."""
        if imp is None or len(imp[0]) != len(lists):
            return None
        changed: set = set()
        for old, new in zip(imp[0], lists):
            if old is new:
                continue
            region = _differing(old, new, CUTOFF_ITEMS - len(changed))
            if region is None:
                return None
            for it in region:
                if it.name is None or _is_dim(it):
                    return None
                changed.add(it.name)
        ivisible, broken, declared = dict(imp[1]), dict(imp[2]), set(imp[3])
        maps = [self._plain_names(p, e[3]) for p in closure if (e := self._interface_entry(p))[1] is not None]
        if len(maps) != len(lists):
            return None
        for n in list(changed):
            before = ivisible.get(n)
            now = next((it for m in maps if (it := m.get(n)) is not None), None)
            if now is before:
                changed.discard(n)
                continue
            if (before is not None and _is_dim(before)) or (now is not None and _is_dim(now)) or \
                    _is_model(before) != _is_model(now):
                return None
            if now is None:
                del ivisible[n]
            else:
                ivisible[n] = now
            broken.pop(n, None)
            declared.discard(n)
            if isinstance(now, A.BrokenItem):
                broken[n] = now.declared_kind
            elif isinstance(now, A.ModelItem):
                declared.add(n)
        if any(n not in imp[1] for n in changed):  # a new name: in the order a whole pass gives
            ivisible = _first_of_each(maps)  # (`broken` is looked up by name only: any order)
        return (lists, ivisible, broken, declared), tuple(sorted(changed))

    def _declare(self, names, models, sigs, decl, dims, model_names, own: dict, diags: list):
        """The model or signature of each (name, item) into `models` or `sigs` (a dict, or
        Declarations: built at once; from the cache while what it read holds), and this
        file's declaration errors into `diags`. `decl`: the analysis's declaration answers
        (Meanings.decl)."""
        looked = 0
        for n, it in names:
            if isinstance(it, A.ModelItem):
                cache, build, into = self._model_cache, build_model, models
            elif isinstance(it, A.FnItem):
                cache, build, into = self._sig_cache, build_signature, sigs
            else:
                continue
            looked += 1
            e = cache.get(id(it))  # _cached's reuse, inline: this loop sees every item
            if e is not None and e[0] is it and (e[1][0] is None or e[1][0](decl) == e[1][1]):
                got = e[2]
            else:
                got = self._cached(cache, it, decl, build, dims, model_names)
            if type(into) is dict:
                into[n] = got[0]
            else:
                into.set_built(n, it, got[0])
            if got[1] and own.get(n) is it:
                diags.extend(got[1])
        self._count("declarations", looked)

    def _builder(self, cache: dict, build, decl, dims, model_names):
        """item -> its model or signature (`_cached`), for an analysis's Declarations to
        build an import's when it is first read."""
        def one(item):
            self._count("declarations")
            return self._cached(cache, item, decl, build, dims, model_names)[0]
        return one

    def _cached(self, cache: dict, item, decl, build, dims, model_names):
        """A declaration's (fields, signature) build, reused while what it read holds."""
        e = cache.get(id(item))
        if e is not None and e[0] is item and Meanings.holds(e[1], decl):
            return e[2]
        self._count("items")
        reads: set = set()
        v = build(item, DimsView(dims, reads), ModelNames(model_names, reads))
        cache[id(item)] = (item, Meanings.record(reads, decl), v)
        return v

    def _body(self, item: A.FnItem, sig: Signature, env: FileEnv, meanings: Meanings) -> FnResult:
        """A body's check, reused while its signature and every name it read mean the same."""
        own = meanings.full[sig.name][3]  # sig_meaning(sig), computed once per analysis
        e = self._body_cache.get(id(item))
        if e is not None and e[0] is item and e[1] == own and meanings.holds(e[2], meanings.full):
            return e[3]
        self._count("items")
        reads: set = set()
        res = check_function(item, sig, EnvView(env, reads))
        self._body_cache[id(item)] = (item, own, meanings.record(reads, meanings.full), res)
        return res

    def _unread_fields(self, f: SourceFile, own: dict, env, fns: dict, models: dict) -> list:
        """W0102: a param field that no exported function of this file reads."""
        roots = [it.name for it, _ in exported(own, env)]
        if not roots:
            return []
        reads: set = set()
        reached = _calls_from([r for r in roots if r in fns],
                              lambda n: fns.get(n) or self._imported_result(own, n, f))
        for res in reached.values():
            reads |= res.field_reads
        out = []
        for name, it in own.items():
            m = models.get(name)
            if not isinstance(it, A.ModelItem) or m is None:
                continue
            for fname, fi in m.fields.items():
                if isinstance(fi.type, TensorT) and (name, fname) not in reads:
                    out.append(warning("W0102", f"no exported function reads `{fname}`",
                                       it.span(fi.node.name_pos), "this weight is never used")
                               .help("remove the field, or use it in the exported function"))
        return out

    def _imported_result(self, own: dict, name: str, f: SourceFile):
        for target in self._import_closure(f.path):
            a = self.analyze(target)
            if a is not None and name in a.fns:
                self.note_body_read(a.fns[name].item)
                return a.fns[name]
        return None

    def _model_cycles_of(self, path: str, models: dict, own: dict) -> list:
        """E0211, again only when a model's fields changed (a new ModelInfo)."""
        models = reachable_models(models, own)  # (the imports' other models play no part)
        last = self._model_cycles.get(path)
        if last is not None and last[0].keys() == models.keys() and \
                all(map(operator.is_, last[0].values(), models.values())):
            return last[1]
        out = model_cycles(models, own)
        self._model_cycles[path] = (models, out)
        return out

    def _cycles_of(self, path: str, fns: dict, own: dict) -> list:
        """E0207. With no cycle in the last analysis, a new one must go through a body
        whose result changed (only a changed body has new calls): look from those only."""
        last = self._cycles.get(path)
        if last is not None and not last[1]:
            before = last[0]
            changed = [n for n, r in fns.items() if before.get(n) is not r]
            if not any(_reaches(fns, n) for n in changed):
                self._cycles[path] = (fns, [])
                return []
        out = self._recursion(fns, own)
        self._cycles[path] = (fns, out)
        return out

    def _recursion(self, fns: dict, own: dict) -> list:
        graph = {n: {c for c in r.callees if c in fns} for n, r in fns.items()}
        component = _components(graph)
        out = []
        for n, r in fns.items():
            for callee, poss in r.callees.items():
                if callee not in fns or component[callee] != component[n]:
                    continue  # a call between two components is on no cycle
                path = _path(graph, callee, n)
                if path is None:
                    continue
                cycle = [n] + path
                msg = f"`{n}` calls itself" if callee == n else f"`{n}` calls itself: {' → '.join(cycle)}"
                for pos in poss:
                    out.append(error("E0207", msg, own[n].span(pos), "this call is on the cycle").help(
                        "recursion can't be unrolled into a fixed graph: write the repetition as a stack and `for`"))
        return out

    # ------------------------------------------------------------ queries
    def all_diagnostics(self, paths) -> dict:
        return {p: self.diagnostics(p) for p in paths}


PLAIN_DIMS = 4096  # simple dims in a file at most, for its name map to be copied to a dict (_plain_names)
RECENT = 1  # files last changed whose syntax trees and check details trim() keeps whole


class _EnvHolder:
    """The environment of a file's last trimmed analysis (Workspace.trim), one per file:
    the slimmed results point here, not at the environment they were slimmed under (a
    file's results outlive many analyses: each would keep its own alive). Called with a
    slimmed result and its signature, it checks that function again (FnResult.slim): a
    result still in use holds under this environment (what it read means the same)."""

    __slots__ = ("env",)

    def __call__(self, res: FnResult, sig: Signature) -> FnResult:
        return check_function(res.item, sig, EnvView(self.env, set()))


def _reached(fns: dict, roots: list) -> set:
    """The names of `fns` that the functions `roots` call, directly or not, and the roots."""
    return set(_calls_from(roots, fns.get))


def _calls_from(roots: list, result_of) -> dict:
    """name -> result of the functions `roots` call, directly or not, and of the roots;
    `result_of(name)` is a function's result, None for one not followed."""
    return {n: res for n, res in _reached_from(roots, result_of, lambda res: res.callees) if res is not None}


CUTOFF_ITEMS = 256  # an import's edit of more items than this: its importers are declared again whole


def _differing(old: list, new: list, limit: int):
    """The items of `old` and `new` outside their longest common prefix and suffix (by
    identity), or None when there are more than `limit` of them."""
    m = min(len(old), len(new))
    i = 0
    while i < m and old[i] is new[i]:
        i += 1
    j = 0
    while j < m - i and old[-1 - j] is new[-1 - j]:
        j += 1
    region = old[i:len(old) - j] + new[i:len(new) - j]
    return region if len(region) <= limit else None


def _is_model(it) -> bool:
    return isinstance(it, A.ModelItem) or (isinstance(it, A.BrokenItem) and it.declared_kind == "model")


def _same_dims(old: list, new: list) -> bool:
    """Whether two versions of a file's items have the same dim items (the same objects,
    in the same order): the items that differ (`_differing`) are all named, none a dim."""
    if old is new:
        return True
    region = _differing(old, new, CUTOFF_ITEMS)
    return region is not None and all(it.name is not None and not _is_dim(it) for it in region)


def _first_of_each(maps: list) -> dict:
    """name -> item of several name maps in order, the first map's item for a name that
    several have (as `_first_of_each_name` over their items)."""
    out: dict = {}
    for m in maps:
        if isinstance(m, dict) and out.keys().isdisjoint(m):
            out.update(m)  # no name of an earlier map (the usual case): in C
            continue
        for n, it in m.items():
            out.setdefault(n, it)
    return out


def _first_of_each_name(items: list) -> NameMap:
    """name -> the first item that declares it, in the items' order (no string per
    simple dim: syntax/names.py)."""
    return NameMap(items)


def _declared(visible: dict) -> tuple:
    """({broken name: declared kind}, {model names}) of a name -> item map, in its order
    (its dims: DimTable's view of it)."""
    some = without_simple_dims(visible)
    broken_kinds = {n: it.declared_kind for n, it in some.items() if isinstance(it, A.BrokenItem)}
    model_names = {n for n, it in some.items() if isinstance(it, A.ModelItem)}
    return broken_kinds, model_names


def _reaches(fns: dict, name: str) -> bool:
    """Whether the calls of `name` lead back to it (depth first, on an explicit stack)."""
    seen = set()
    stack = [name]
    while stack:
        r = fns.get(stack.pop())
        if r is None:
            continue
        for c in r.callees:
            if c == name:
                return True
            if c not in seen and c in fns:
                seen.add(c)
                stack.append(c)
    return False
