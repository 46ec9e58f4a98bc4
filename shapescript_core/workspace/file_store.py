"""The file store: open files and files read from disk, with the reading boundary."""
from __future__ import annotations

import os
from typing import Optional
from ..files import Access, ReadRefused, Refusal, check_path, read_bytes
from ..syntax import parse_cache
from ..syntax.source import decode_source
from .source_file import SourceFile, item_syntax_errors


RECENT = 1  # files last changed whose syntax trees and check details trim() keeps whole


class FileStore:
    """The files: open ones with their editor texts, the others read from disk through the
    access policy (files.py), each parsed into items (SourceFile)."""

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

    def syntax_diagnostics(self, path: str, cancelled=None) -> list:
        """The syntax and layout errors of an open file's items: known as soon as it is
        parsed, before any check (its function bodies parsed now, if they were not; a
        True `cancelled()` stops that: item_syntax_errors)."""
        f = self.files.get(self.norm(path))
        return [] if f is None else item_syntax_errors(f.items, cancelled, f.path)

    def save_parse_cache(self, path: str) -> bool:
        """Keep an open file's parsed items on disk for the next session (parse_cache.py)."""
        f = self.files.get(self.norm(path))
        return f is not None and parse_cache.save(f.path, f.items)

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
