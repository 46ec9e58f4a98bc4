"""Which files an `import` may name: a ShapeScript file inside the project.

The project root is the folder holding the nearest `shapescript.toml` above the file
checked; else the folder the editor opened (the language server's workspace folder),
when the file lies in it; else the folder of the file checked. An import names a `.ss` file, by a
relative path that stays under that root, also once symbolic links are followed.
Anything else (an absolute path, `..` leading out, a file of another kind, a link
leading out) is E0213 at the import, and is neither read nor exported: a source can't
pull `/etc/passwd` or a Python file into a model directory.
"""
from __future__ import annotations

import os
from typing import Optional

SETTINGS_FILE = "shapescript.toml"
EXTENSION = ".ss"


def project_root(path: str, opened=()) -> str:
    """The project root of the file `path` (absolute, normalized); `opened`: the folders
    opened as projects (absolute, normalized)."""
    start = os.path.dirname(os.path.abspath(path))
    d = start
    while True:
        if os.path.isfile(os.path.join(d, SETTINGS_FILE)):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    opened = [os.path.normpath(os.path.abspath(r)) for r in opened]
    inside = [r for r in opened if _inside(start, r)]
    return max(inside, key=len) if inside else start


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive, or a mix of absolute and relative
        return False


def import_problem(importer: str, target: str, root: str) -> Optional[str]:
    """Why `import "target"` in the file `importer` is refused under `root`, or None when
    it names a ShapeScript file inside the project."""
    if "\0" in target:
        return "an import path can't hold a NUL character"
    if os.path.isabs(target) or target.startswith("~"):
        return "imports are relative paths inside the project, not absolute ones"
    if not target.endswith(EXTENSION) or os.path.basename(target) == EXTENSION:
        return f"imports name ShapeScript files (`{EXTENSION}`), not other files"
    path = os.path.normpath(os.path.join(os.path.dirname(importer), target))
    root = os.path.normpath(root)
    if not _inside(path, root):
        return f"it leads out of the project (`{root}`)"
    real = os.path.realpath(path)
    if not _inside(real, os.path.realpath(root)) or not real.endswith(EXTENSION):
        return "a link there leads out of the project, or to a file that isn't ShapeScript"
    return None


def resolve_import(importer: str, target: str) -> str:
    """The absolute path `import "target"` in `importer` names (whether allowed or not)."""
    return os.path.normpath(os.path.join(os.path.dirname(importer), target))
