"""What one item's check read of its file's names, and whether those reads still hold.

A check (a model's fields, a function's signature, a function's body) sees the file
through a view that notes each name it looks up, and each time it looks at a whole
namespace: suggestions list every dim or function; messages render sizes by dim name.
The workspace keeps the item's result with the answers those reads got (`Meanings`);
after an edit the result is reused when every answer is still the same. So an edit
costs what it touches: the edited item, and the items that read a name whose meaning
changed. A function that stops parsing still defines its name (as broken), which is a
change for its callers only.

The meaning of a name is all the views can tell about it: its dim size and value, whether
it is a model and that model's fields, its signature, and whether it is broken.
"""
from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
import weakref

ALL_DIMS = ("all dims",)  # every dim's name, size and value (sizes rendered by name)
ALL_MODELS = ("all models",)  # the set of model names
ALL_FNS = ("all functions",)  # the function names, in order
EVERYTHING = ("everything",)  # an attribute the views don't know: every name's meaning


class DimsView:
    """A DimTable, noting what is read."""

    def __init__(self, dims, reads: set):
        self._dims = dims
        self._reads = reads
        self.values = _Values(dims.values, reads)

    def is_dim(self, name: str) -> bool:
        self._reads.add(name)
        return self._dims.is_dim(name)

    def canon(self, name: str):
        self._reads.add(name)
        return self._dims.canon(name)

    def render(self, s) -> str:
        self._reads.add(ALL_DIMS)
        return self._dims.render(s)

    def __getattr__(self, attr):
        self._reads.add(ALL_DIMS)
        return getattr(self._dims, attr)


class _Values(Mapping):
    """A dim's value by name, noting each name looked up."""

    def __init__(self, values: dict, reads: set):
        self._values = values
        self._reads = reads

    def __getitem__(self, name):
        self._reads.add(name)
        return self._values[name]

    def __contains__(self, name):
        self._reads.add(name)
        return name in self._values

    def get(self, name, default=None):
        self._reads.add(name)
        return self._values.get(name, default)

    def __iter__(self):
        self._reads.add(ALL_DIMS)
        return iter(self._values)

    def __len__(self):
        self._reads.add(ALL_DIMS)
        return len(self._values)


class ModelNames:
    """The set of model names, noting membership tests by name, and listings whole."""

    def __init__(self, names: set, reads: set):
        self._names = names
        self._reads = reads

    def __contains__(self, name) -> bool:
        self._reads.add(name)
        return name in self._names

    def __iter__(self):
        self._reads.add(ALL_MODELS)
        return iter(sorted(self._names))

    def __len__(self) -> int:
        self._reads.add(ALL_MODELS)
        return len(self._names)


class EnvView:
    """A FileEnv for one body's check, noting what is read."""

    def __init__(self, env, reads: set):
        self._env = env
        self._reads = reads
        self._note = reads.add
        self._dim_info = env.dims.info  # FileEnv.dim, inline: the checker's most frequent question
        self.dims = DimsView(env.dims, reads)

    def dim(self, name: str):
        self._note(name)
        info = self._dim_info.get(name)
        return info.canon if info is not None else None

    def dim_names(self) -> list:
        self._reads.add(ALL_DIMS)
        return self._env.dim_names()

    def model(self, name: str):
        self._reads.add(name)
        return self._env.model(name)

    def model_names(self) -> ModelNames:
        return ModelNames(self._env.model_names(), self._reads)

    def sig(self, name: str):
        self._reads.add(name)
        return self._env.sig(name)

    def fn_names(self) -> list:
        self._reads.add(ALL_FNS)
        return self._env.fn_names()

    def is_broken_name(self, name: str) -> bool:
        self._reads.add(name)
        return self._env.is_broken_name(name)

    def render(self, t, dtype: bool = False) -> str:
        self._reads.add(ALL_DIMS)
        return self._env.render(t, dtype)

    def __getattr__(self, attr):
        self._reads.add(EVERYTHING)
        return getattr(self._env, attr)


def sig_meaning(sig):
    """What a caller (or the body itself) can see of a signature."""
    if sig is None:
        return None
    return sig.fingerprint, tuple(sorted(sig.svars)), sig.broken


class _Memo(dict):
    """Answers by key, each computed on first use. It holds its Meanings' method weakly:
    no reference cycle, so the last analysis's answers go when the next replaces them
    (by reference counting, not at some later cycle collection, while the next
    analysis's big tables are being made)."""

    def __init__(self, compute):
        super().__init__()
        self._compute = weakref.WeakMethod(compute)

    def __missing__(self, key):
        v = self[key] = self._compute()(key)
        return v


class Meanings:
    """The answers every read gets in one file's analysis, computed once per key.

    Declarations (fields, signatures) are built before the file's models and signatures
    exist, and read only dims and model names: their answers are in `decl`. Bodies see
    everything: `full`. A check's reads are kept as a getter of its keys and the answers
    it got, so seeing whether they still hold is one C-level lookup per key."""

    def __init__(self, dims, model_names: set, broken: dict, everything):
        self.dims = dims
        self.model_names = model_names
        self.broken = broken  # name -> declared kind, for the items that didn't parse
        self._everything = everything  # () -> a fingerprint of every visible name's kind
        self.models: dict = {}
        self.sigs: dict = {}
        self.decl = _Memo(self._decl)
        self.full = _Memo(self._full)

    def carry_decl(self, prev: "Meanings | None"):
        """Take over the declaration answers of the file's last analysis that still hold:
        all of them while the dims are the same, but for names that became or stopped
        being models."""
        if prev is None or prev.dims.fingerprint != self.dims.fingerprint:
            return
        memo = self.decl
        memo.update(prev.decl)
        moved = prev.model_names ^ self.model_names
        for k in moved:
            memo.pop(k, None)
        memo.pop(EVERYTHING, None)
        if moved:
            memo.pop(ALL_MODELS, None)

    def carry_full(self, prev: "Meanings | None", among=None):
        """Once models and signatures are built: take over the answers for the names
        whose model, signature, broken state and model-ness are the same objects as in the
        last analysis. `among`: the only names whose model or signature may differ (the
        others were taken from the last analysis), else all are compared."""
        if prev is None or prev.dims.fingerprint != self.dims.fingerprint:
            return
        changed = prev.model_names ^ self.model_names
        for mine, theirs in ((self.models, prev.models), (self.sigs, prev.sigs)):
            # (Declarations: a name not built in both may differ: its answer is computed again)
            changed |= mine.differing(theirs, among)
        changed.update(n for n, k in self.broken.items() if prev.broken.get(n) != k)
        changed.update(n for n in prev.broken if n not in self.broken)
        memo = self.full
        memo.update(prev.full)
        for k in changed:
            memo.pop(k, None)
        for k in (EVERYTHING, ALL_FNS, ALL_MODELS):
            memo.pop(k, None)

    def _dim(self, name: str):
        d = self.dims
        if not d.is_dim(name):
            return None
        return d.canon(name), d.values.get(name)

    def _decl(self, key):
        if isinstance(key, str):
            return self._dim(key), key in self.model_names
        # models and signatures are not built yet: dims and kinds only
        return self._whole(key) if key in (ALL_DIMS, ALL_MODELS) else self._everything()

    def _full(self, key):
        if isinstance(key, str):
            m = self.models.get(key)
            return (self._dim(key), key in self.model_names, m.fingerprint if m is not None else None,
                    sig_meaning(self.sigs.get(key)), self.broken.get(key))
        return self._whole(key)

    def _whole(self, key):
        if key == ALL_DIMS:
            return self.dims.fingerprint
        if key == ALL_MODELS:
            return tuple(sorted(self.model_names))
        if key == ALL_FNS:
            return tuple(self.sigs)
        # anything else a check may look at: every name's kind, model and signature
        return (self._everything(), tuple((n, m.fingerprint) for n, m in self.models.items()),
                tuple((n, sig_meaning(s)) for n, s in self.sigs.items()))

    @staticmethod
    def record(reads: set, memo: _Memo) -> tuple:
        """(getter, answers) of these reads now."""
        if not reads:
            return None, None
        getter = itemgetter(*reads)
        return getter, getter(memo)

    @staticmethod
    def holds(recorded: tuple, memo: _Memo) -> bool:
        getter, answers = recorded
        return getter is None or getter(memo) == answers
