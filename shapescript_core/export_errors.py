"""The export's errors and `ParamSpec`: a leaf every part of the export imports (it
imports nothing of export/)."""
from __future__ import annotations

from dataclasses import dataclass


class ExportError(Exception):
    """A clean failure of an export: a message for the user, and the diagnostics behind it."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.message = message
        self.diagnostics = list(diagnostics)


class ExportCancelled(Exception):
    """The client or the user cancelled the export."""


class WriterUnavailable(Exception):
    """A target's writer is not installed (its module does not import)."""


class RequestError(Exception):
    """An option that can't be honoured: a usage error (CLI exit 2)."""


@dataclass
class ParamSpec:
    path: str            # "layers.3.attn.wq" (LANGUAGE.md §2.3)
    field: str           # the field's name in its model ("wq")
    model: str           # the model that declares the field ("Attention")
    shape: tuple         # ints, the dims' values substituted
    dtype: str           # source dtype: f32 f16 bf16 f64 i32 i64 bool
    init: tuple          # ("ones",) ("zeros",) ("normal", std)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


# `--dtype keep` without a .gguf to keep: said by the request (random weights, none, a
# folder) and by the GGUF writer (a file that turned out to be another kind)
KEEP_NEEDS_GGUF = "--dtype keep keeps a .gguf's tensors as they came: give --weights FILE.gguf"
