"""The import graph of the files the Workspace holds."""
from __future__ import annotations

import os
from typing import Optional
from ..imports import import_problem, project_root, resolve_import
from ..syntax import ast as A
from .source_file import SourceFile


class ImportGraph:
    """Which files import which: the project root of a file, its imports, their closure
    and cycles, the open files that import one."""

    def importers(self, path: str) -> list:
        """Open files that import `path`, directly or not. An analysis under way that asks
        has read the set of open files and their texts (E3306's fix edits callers in
        them): it holds only until the next edit of any file (`_drop`)."""
        path = self.norm(path)
        if self._analyzing:
            self._read_open[-1] = True
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
