"""E0214: an imported path that is no file that may be read (files.py says why).
Checked by the Workspace (workspace/analysis.py)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error
from ...files import shown


def import_unreadable(imp, refusal) -> Diagnostic:
    """E0214: the imported path is no file that may be read (files.py says why)."""
    helps = {"special": "import a regular `.ss` file",
             "directory": "import a `.ss` file, not a folder",
             "too_large": "split the file, or raise `max_file_size` in shapescript.toml's [limits]",
             "outside": "move the file into the workspace, or open a folder that holds both",
             "bad_path": "write the path without control characters"}
    d = error("E0214", f"can't read `{shown(imp.target)}`: {refusal.reason}", imp.span(imp.target_pos),
              "this file is not read")
    return d.help(helps[refusal.kind]) if refusal.kind in helps else d
