"""Declarations and bodies checked per item, reused while what they read holds."""
from __future__ import annotations

from typing import Optional

from ..check.env import is_dim_item as _is_dim, Signature, build_model, build_signature
from ..check.function import FnResult, check_function
from ..reads import DimsView, EnvView, Meanings, ModelNames
from ..syntax import ast as A
from .results import FileEnv


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


class Declaring:
    """Models, signatures and bodies checked per item and reused while what they read
    means the same (reads.py); what changed among the imports since the last analysis."""

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

    def _kept_body(self, item: A.FnItem, name: str, full) -> Optional[FnResult]:
        """A body's kept check while its signature (`full[name][3]`, sig_meaning, computed
        once per analysis) and every name it read mean the same; None when it must be
        checked (again)."""
        e = self._body_cache.get(id(item))
        if e is not None and e[0] is item and e[1] == full[name][3] and Meanings.holds(e[2], full):
            return e[3]
        return None

    def _body(self, item: A.FnItem, sig: Signature, env: FileEnv, meanings: Meanings) -> FnResult:
        """A body's check, reused while its signature and every name it read mean the same."""
        kept = self._kept_body(item, sig.name, meanings.full)
        if kept is not None:
            return kept
        own = meanings.full[sig.name][3]
        self._count("items")
        reads: set = set()
        res = check_function(item, sig, EnvView(env, reads))
        self._body_cache[id(item)] = (item, own, meanings.record(reads, meanings.full), res)
        return res
