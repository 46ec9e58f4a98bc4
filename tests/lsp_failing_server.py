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


_analyze = Workspace.analyze


def _core_analyze(self, path, *args, **kwargs):  # what the server's publishing asks the core
    if "corefail" in path:
        raise RuntimeError("the core exploded")
    return _analyze(self, path, *args, **kwargs)


ide_hover.hover = _hover
diagnostics.schedule_check = _schedule_check
Workspace.analyze = _core_analyze

from shapescript_server.main import main  # noqa: E402

sys.exit(main())
