"""Kept for workspace.py; goes when the Workspace is split (now workspace/analysis.py,
which imports these five names from here: it is to import them from check/codes/). Every
code's words are in its own module, check/codes/eXXXX.py: import from there."""
from __future__ import annotations

from .codes.e0203 import defined_twice
from .codes.e0210 import import_missing, import_not_utf8
from .codes.e0213 import import_outside
from .codes.e0214 import import_unreadable

__all__ = ["defined_twice", "import_missing", "import_not_utf8", "import_outside", "import_unreadable"]
