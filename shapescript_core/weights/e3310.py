"""E3310: the weights have no tensor for a param. Checked in weights/check.py
(`check_weights`), at export."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


def e3310(path: str, span, source: str) -> Diagnostic:
    return (error("E3310", f"the weights have no `{path}`", span, f"`{path}` is declared here")
            .note(f"the weights are {source}")
            .help("save the weights under the param paths (field names joined by dots, with stack "
                  "indices), or try the export with --random-weights"))
