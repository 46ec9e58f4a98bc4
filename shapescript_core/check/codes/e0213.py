"""E0213: an import that is not a ShapeScript file inside the project. Checked by the
Workspace (workspace/analysis.py), with imports.py saying why."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error
from ...files import shown


def import_outside(imp, why: str) -> Diagnostic:
    """An import that is not a ShapeScript file inside the project (`why`: imports.py)."""
    return error("E0213", f"`{shown(imp.target)}` is not a ShapeScript file inside the project",
                 imp.span(imp.target_pos), why).help(
        "import a `.ss` file by its path from this file's folder, inside the project "
        "(the folder of the file checked, or the one holding shapescript.toml)")
