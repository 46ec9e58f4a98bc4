"""Nothing below the Workspace receives the Workspace itself: the compiler, the serving
checks, the weights importer and the architecture matcher take a `ProgramDB`
(program_db.py), which `Workspace.program` is. Watched at run time: every call into a
module of those layers, while every example and test program is checked for every
target, compiled for every target and exported, has no argument that is a Workspace."""
import os
import sys

import pytest

from shapescript_core.compile.graph import build_program
from shapescript_core.program_db import Inputs, ProgramDB
from shapescript_core.program_view import ProgramView
from shapescript_core.workspace import Workspace
from snapshot_support import ROOT, from_contract, programs, snapshot

BELOW = tuple(os.path.join(ROOT, "shapescript_core", d) + os.sep
              for d in ("syntax", "check", "compile", "arch", "serving", "weights")) + \
    tuple(os.path.join(ROOT, "shapescript_core", f) for f in ("targets.py", "settings.py", "program_db.py"))


class Watch:
    """Calls into the modules below the Workspace that received a Workspace."""

    def __init__(self):
        self.seen = []

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(BELOW):
            for name, v in frame.f_locals.items():
                if isinstance(v, Workspace):
                    self.seen.append(f"{os.path.relpath(frame.f_code.co_filename, ROOT)}:"
                                     f"{frame.f_code.co_name}({name})")

    def __enter__(self):
        sys.setprofile(self)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)


LOCAL = [(n, p) for n, p in programs() if not from_contract(n)]


def test_checking_and_compiling_every_program_hands_down_only_the_interface():
    with Watch() as w:
        for _name, path in LOCAL:
            snapshot(path)
    assert sorted(set(w.seen)) == []


def test_an_export_and_an_import_hand_down_only_the_interface(tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("gguf")
    from shapescript_core.export.request import make_request
    from shapescript_core.export.run import run_export
    src = os.path.join(ROOT, "tests", "programs", "gguf", "llama_variant.ss")
    outs = []
    with Watch() as w:
        for target, name in (("gguf", "m.gguf"), ("hf", "hf")):
            ws = Workspace()
            req = make_request(src, target, output=str(tmp_path / name), random_weights=True)
            res = run_export(ws, req)
            outs.append((target, res.status, res.message))
        ws = Workspace()  # the hf export's weights read back by role
        req = make_request(src, "gguf", output=str(tmp_path / "back.gguf"), weights=str(tmp_path / "hf"))
        res = run_export(ws, req)
        outs.append(("import", res.status, res.message))
    assert [o[1] for o in outs] == [0, 0, 0], outs
    assert os.path.isfile(tmp_path / "back.gguf")
    assert sorted(set(w.seen)) == []


def test_the_watch_sees_a_workspace_handed_down():
    """The checks above can fail: the Workspace itself, handed to the compiler, is seen."""
    path = os.path.join(ROOT, "examples", "llama.ss")
    ws = Workspace()
    with Watch() as w:
        build_program(ws, path, None)
    assert any("compile/graph.py:build_program(db)" in s for s in w.seen)
    with Watch() as w:
        build_program(ws.program, path, None)
    assert w.seen == []


def test_the_view_is_the_interface_and_no_more():
    """ProgramView forwards exactly the Protocol's members: no setter, no file store."""
    members = {n for n in vars(ProgramDB) if not n.startswith("_")}
    assert members == {n for n in vars(ProgramView) if not n.startswith("_")}
    ws = Workspace()
    for name in ("set_text", "set_dim_overrides", "trim", "close", "files", "set_inputs"):
        assert not hasattr(ws.program, name)


def test_inputs_are_one_value_and_a_new_one_drops_the_analyses(tmp_path):
    f = tmp_path / "a.ss"
    f.write_text("dim D = 4\nfn f(x: [D] f32) -> [D] f32:\n    return x\n")
    ws = Workspace()
    path = str(f)
    a = ws.analyze(path)
    assert ws.analyze(path) is a
    assert ws.set_inputs(ws.inputs) is False and ws.analyze(path) is a
    before = ws.inputs
    with ws.program.with_dims({"D": 8}):
        assert ws.inputs.dims == {"D": 8} and ws.analyze(path) is not a
    assert ws.inputs == before == Inputs()
    ws.set_tensor_parallel(2)
    assert ws.inputs.tensor_parallel == 2 and ws.inputs.replace(tensor_parallel=1) == Inputs()
