"""The program as the layers below the Workspace see it: a narrow, read-only interface.

`compile/`, the serving checks (`serving/`) and the weights importer (`weights/`) take a
`ProgramDB`, never the Workspace (rust-analyzer's `db: &dyn SourceDatabase`): they read
files and analyses, they never open, edit, trim or configure anything. The Workspace
hands them `Workspace.program`, a `ProgramView` over itself (program_view.py); `tests/test_program_db.py`
checks that nothing below the Workspace ever receives the Workspace.

The options an analysis is made with (`Inputs`: the dim overrides, the settings' targets,
vLLM's tensor-parallel ranks, the explicit export requests) are one immutable value. A
change of inputs is a new value, and the analyses made with the old one are not reused.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Protocol


@dataclass(frozen=True)
class Inputs:
    """What one analysis is asked, beside the files' texts."""

    dims: dict = field(default_factory=dict)  # NAME -> value, over the source's dims (`--dim`, [dims])
    default_targets: Optional[frozenset] = None  # the settings' targets for an unmarked `forward`
    tensor_parallel: int = 1  # the ranks vLLM is to split `vllm` exports across (E3307)
    # path -> [(fn name or None, {targets})]: explicit export checks (`--target`, `--fn`, an export's own)
    requests: dict = field(default_factory=dict)

    def requests_of(self, path: str) -> list:
        return self.requests.get(path) or []

    def replace(self, **changes) -> "Inputs":
        return dataclasses.replace(self, **changes)

    def __hash__(self):  # the dicts make the generated hash fail; compared by value
        return hash((tuple(sorted(self.dims.items())), self.default_targets, self.tensor_parallel))


class ProgramDB(Protocol):
    """What the compiler, the serving checks and the importer read of a program."""

    @property
    def inputs(self) -> Inputs: ...

    def norm(self, path: str) -> str: ...

    def file(self, path: str): ...  # SourceFile or None

    def analyze(self, path: str): ...  # Analysis or None

    def import_closure(self, path: str) -> list: ...

    def importers(self, path: str) -> list: ...

    def exported(self, analysis) -> list: ...  # [(FnItem, targets)]: targets.py's rule, with the inputs

    def note_body_read(self, item) -> None: ...  # an imported body an analysis under way read

    def export_checks_running(self, path: str) -> bool: ...

    def export_checks_of(self, path: str) -> contextlib.AbstractContextManager: ...

    def with_dims(self, dims: dict) -> contextlib.AbstractContextManager: ...
