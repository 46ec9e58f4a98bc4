"""The Workspace's inputs: one `Inputs` value (program_db.py), replaced whole."""
from __future__ import annotations

import contextlib
from typing import Optional
from ..program_db import Inputs
from ..targets import export_targets



class Configured:
    """The inputs every analysis is asked beside the texts (program_db.Inputs): dims,
    targets, tensor-parallel ranks, export requests; a new value drops the analyses."""

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
