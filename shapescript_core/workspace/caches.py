"""Upkeep of the per-item and per-file caches: forgetting, trimming, counting."""
from __future__ import annotations

from ..check.env import Signature
from ..check.function import FnResult, check_function
from ..check.whole_file import calls_from
from ..reads import EnvView
from ..syntax import ast as A



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
    return set(calls_from(roots, fns.get))


class Caches:
    """The caches' upkeep: what an edit or a close forgets, memory trimming, work counts."""

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
        """Forget the analysis of `path`, the analyses that read the set of open files
        (`importers`: E3306's fix reorders calls in them), and with `closure` those that import `path`. The
        other importers of an edited file are looked at again when asked
        (`_still_valid`: early cutoff when its interface stayed the same)."""
        self._analysis.pop(path, None)
        for p, a in list(self._analysis.items()):
            if a.read_open or (closure and any(q == path for q, _ in a.stamp)):
                del self._analysis[p]

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

    def cache_sizes(self) -> dict:
        """Entries in each item cache (for tests and benchmarks)."""
        return {"models": len(self._model_cache), "signatures": len(self._sig_cache),
                "bodies": len(self._body_cache)}
