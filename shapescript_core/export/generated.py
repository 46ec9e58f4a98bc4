"""Writing the files of an export into its temporary: each generated file is parsed as
its format first (Python with `ast`, JSON, TOML), and no file is ever written over
another, so a source named like a generated file can't replace it.

The program's sources are copied last (`copy_sources`), under their paths relative to
the project root, folders made; only ShapeScript files reach an export (imports.py
refuses anything else).
"""
from __future__ import annotations

import ast
import json
import logging
import os

from ..export_errors import ExportError

log = logging.getLogger("shapescript.export")


def check_parses(rel: str, text: str):
    """ExportError (an internal error, logged) when the generated `rel` does not parse."""
    try:
        if rel.endswith(".py"):
            ast.parse(text, rel)
        elif rel.endswith(".json"):
            json.loads(text)
        elif rel.endswith(".toml"):
            import tomllib  # only for the vLLM plugin's pyproject.toml
            tomllib.loads(text)
    except (SyntaxError, ValueError) as e:  # a bug of ours: said, and logged without the text
        line = getattr(e, "lineno", None)
        bad = text.split("\n")[line - 1][:200] if line and 0 < line <= text.count("\n") + 1 else ""
        log.error("the generated %s does not parse: %s; line %s: %r", rel, e, line, bad)
        msg = getattr(e, "msg", None) or str(e).splitlines()[0]
        raise ExportError(f"internal error: the generated {rel} does not parse ({msg}"
                          f"{f', line {line}' if line else ''})") from e


def _inside(root: str, rel: str) -> str:
    path = os.path.normpath(os.path.join(root, rel))
    if os.path.isabs(rel) or os.path.commonpath([path, os.path.normpath(root)]) != os.path.normpath(root):
        raise ExportError(f"internal error: `{rel}` is not a path inside the export")
    return path


def create(root: str, rel: str, data: bytes):
    """Write a new file `rel` under `root`, its folders made; never over an existing one."""
    path = _inside(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise ExportError(f"two files of the export are named `{rel}`: a source can't have the name of a "
                          "file the export writes (rename it, keeping the .ss extension)") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_generated(root: str, rel: str, text: str):
    """Write the generated text file `rel` (checked to parse) under `root`."""
    check_parses(rel, text)
    create(root, rel, text.encode("utf-8"))


def copy_sources(root: str, sources: dict):
    """Write the program's sources ({path relative to the project: text}) under `root`."""
    for rel, text in sources.items():
        create(root, rel, text.encode("utf-8"))
