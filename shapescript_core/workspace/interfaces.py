"""Interface keys and the early cutoff: when a file's last analysis still holds."""
from __future__ import annotations

import dataclasses
import hashlib
from ..syntax import ast as A
from ..syntax.names import NameMap
from .results import Analysis


PLAIN_DIMS = 4096  # simple dims in a file at most, for its name map to be copied to a dict (_plain_names)


def _first_of_each_name(items: list) -> NameMap:
    """name -> the first item that declares it, in the items' order (no string per
    simple dim: syntax/names.py)."""
    return NameMap(items)


class Interfaces:
    """What importers of a file can see (its interface key), and whether an analysis still
    holds: the same items, the same interfaces of its imports (early cutoff)."""

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
