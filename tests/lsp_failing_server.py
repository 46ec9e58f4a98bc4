"""The language server with three features made to fail, for tests/test_lsp_robustness.py:
hover raises; the check of a document whose name holds "boom" raises in the didOpen
handler; the core raises for paths holding "corefail"."""
import sys

import shapescript_server.diagnostics as diagnostics
import shapescript_core.ide.hover as ide_hover
from shapescript_core.workspace import Workspace


def _hover(*args, **kwargs):
    raise RuntimeError("hover exploded")


_schedule = diagnostics.schedule_check


def _schedule_check(ls, uri):
    if "boom" in uri:
        raise RuntimeError("check exploded")
    return _schedule(ls, uri)


_diagnostics = Workspace.diagnostics


def _core_diagnostics(self, path):
    if "corefail" in path:
        raise RuntimeError("the core exploded")
    return _diagnostics(self, path)


ide_hover.hover = _hover
diagnostics.schedule_check = _schedule_check
Workspace.diagnostics = _core_diagnostics

from shapescript_server.main import main  # noqa: E402

sys.exit(main())
