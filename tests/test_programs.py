"""Larger programs that use many features at once and must check clean."""
import glob
import os

import pytest

from shapescript_core.workspace import Workspace

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(glob.glob(os.path.join(HERE, "programs", "*.ss")))


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_program_checks_clean(path):
    ws = Workspace()
    ws.set_text(path, open(path, encoding="utf-8").read())
    errors = [(d.code, d.message) for d in ws.diagnostics(path) if d.severity == 1]
    assert errors == []


def test_group_axes_are_named_by_their_size():
    # (2 d) with d = D/2 is an axis of size D, so it is named D and aligns with D
    src = "dim D = 64\n\nfn f(x: [b D]) -> [b D]:\n    u = x |> rearrange(b (2 d) -> b 2 d) |> rearrange(b 2 d -> b (2 d))\n    return x + u\n"
    ws = Workspace()
    ws.set_text("/tmp/shapescript-test/g.ss", src)
    assert ws.diagnostics("/tmp/shapescript-test/g.ss") == []
