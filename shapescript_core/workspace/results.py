"""What an analysis gives (Analysis, the file's environment FileEnv) and what it keeps for
the next one (Declared): the per-file analysis's results, shared by its parts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional
from ..check.env import DimTable, ModelInfo, Signature
from ..check.sizes import Size
from ..check.types import TensorT, Type, render_nested
from ..syntax import ast as A
from ..syntax.names import without_simple_dims
from .source_file import SourceFile


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
    read_open: bool = False  # it asked which open files import one (Workspace.importers): any edit drops it
    trimmed: bool = False  # Workspace.trim has slimmed its function results


class _Seen(NamedTuple):
    """What a file sees of its imports and its own names (Workspace._imported_view)."""

    ivisible: dict  # name -> item the imports declare
    visible: dict  # name -> item: the imports' and, over them, the file's own
    changed: Optional[tuple]  # imported names whose item changed since the last analysis (None: unknown)
    old_lists: tuple  # the imports' item lists of the last analysis
    shadowed: bool  # an own name hides an import's
    broken_kinds: dict  # name -> declared kind of the names whose item didn't parse
    broken: set  # (name, kind) of those
    model_names: set  # the names declared as models (broken ones included)


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


def _declared(visible: dict) -> tuple:
    """({broken name: declared kind}, {model names}) of a name -> item map, in its order
    (its dims: DimTable's view of it)."""
    some = without_simple_dims(visible)
    broken_kinds = {n: it.declared_kind for n, it in some.items() if isinstance(it, A.BrokenItem)}
    model_names = {n for n, it in some.items() if isinstance(it, A.ModelItem)}
    return broken_kinds, model_names
