"""`ProgramView`: the `ProgramDB` (program_db.py) a Workspace hands to the layers below it.

It forwards the interface's reads and nothing else, so the compiler, the serving checks
and the importer can't reach the Workspace's files, caches or settings. It is part of the
Workspace's layer: the one module beside it that holds the Workspace.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from .program_db import Inputs


class ProgramView:
    """A `ProgramDB` over a Workspace: forwards the interface's reads, nothing else."""

    __slots__ = ("_ws",)

    def __init__(self, ws):
        self._ws = ws

    @property
    def inputs(self) -> Inputs:
        return self._ws.inputs

    def norm(self, path: str) -> str:
        return self._ws.norm(path)

    def file(self, path: str):
        return self._ws.file(path)

    def analyze(self, path: str):
        return self._ws.analyze(path)

    def import_closure(self, path: str) -> list:
        return self._ws.import_closure(path)

    def importers(self, path: str) -> list:
        return self._ws.importers(path)

    def exported(self, analysis) -> list:
        return self._ws.exported(analysis)

    def note_body_read(self, item) -> None:
        self._ws.note_body_read(item)

    def export_checks_running(self, path: str) -> bool:
        return self._ws.export_checks_running(path)

    def export_checks_of(self, path: str):
        return self._ws.export_checks_of(path)

    @contextlib.contextmanager
    def with_dims(self, dims: dict) -> Iterator[None]:
        """Within the block, the analyses see `dims` as the dim overrides (the importer's
        probes of a checkpoint's sizes); the inputs before it come back after."""
        with self._ws.using(self._ws.inputs.replace(dims=dict(dims))):
            yield
