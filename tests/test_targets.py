"""The one rule (shapescript_core/targets.py): which functions are exported, for which
targets, asked by the checks, the code lens, W0102, the compiler and `export` alike;
and E0212, a name in `@export(…)` that is no target."""
from __future__ import annotations

import textwrap

import pytest

from shapescript_core.compile.graph import find_exported
from shapescript_core.diagnostics import Applicability
from shapescript_core.export_errors import ExportError
from shapescript_core.weights.specs import find_function
from shapescript_core.apply_fixes import apply_edits
from shapescript_core.ide.lens import export_lenses
from shapescript_core.targets import TARGETS
from shapescript_core.workspace import Workspace

PATH = "/tmp/shapescript-targets-test/main.ss"
HEAD = """\
dim D = 8
dim C = 4

model Classifier:
    w: [C D]
    unused: [D]
"""


def _ws(src: str) -> Workspace:
    ws = Workspace()
    ws.set_text(PATH, HEAD + textwrap.dedent(src))
    return ws


def _errors(ws):
    return [(d.code, d.message, d.helps) for d in ws.diagnostics(PATH) if d.severity == 1]


def test_an_unknown_target_is_E0212_at_its_name_and_the_known_ones_still_count():
    ws = _ws("""
        @export(hf, onnx)
        fn classify(m: Classifier, x: [b D]) -> [b C]:
            return linear(x, m.w)
        """)
    (d,) = [d for d in ws.diagnostics(PATH) if d.severity == 1]
    assert (d.code, d.message, d.helps) == ("E0212", "`onnx` isn't an export target",
                                            ["the targets are " + ", ".join(f"`{t}`" for t in TARGETS)])
    text = ws.file(PATH).text
    assert text[d.span.abs_start:d.span.abs_end] == "onnx"
    assert d.fixes == []
    assert [(lens.fn, lens.targets) for lens in export_lenses(ws, PATH)] == [("classify", ["hf"])]
    # W0102 follows the same rule: `classify` is exported and doesn't read `unused`
    assert [d.code for d in ws.diagnostics(PATH) if d.severity == 2] == ["W0102"]


def test_a_misspelt_target_suggests_the_closest_and_a_fix_writes_it():
    ws = _ws("""
        @export(vllm, hff)
        fn classify(m: Classifier, x: [b D]) -> [b C]:
            return linear(x, m.w)
        """)
    (d,) = [d for d in ws.diagnostics(PATH) if d.severity == 1]
    assert (d.code, d.message, d.helps) == ("E0212", "`hff` isn't an export target",
                                            ["there is a target with a similar name: `hf`"])
    (fix,) = d.fixes
    assert fix.applicability == Applicability.UNSAFE  # it changes what is exported
    fixed = apply_edits(ws.file(PATH).text, list(fix.edits))
    assert "@export(vllm, hf)\n" in fixed


MIXED = """
    @export(hf)
    fn classify(m: Classifier, x: [b D]) -> [b C]:
        return linear(x, m.w + m.unused)

    fn forward(m: Classifier, x: [b D]) -> [b C]:
        return linear(x, m.w)
    """


def test_every_tool_picks_the_same_function():
    ws = _ws(MIXED)
    an = ws.analyze(PATH)
    assert [(it.name, sorted(t)) for it, t in ws.exported(an)] == [("classify", ["hf"])]
    assert [(lens.fn, lens.targets) for lens in export_lenses(ws, PATH)] == [("classify", ["hf"])]
    assert find_exported(ws.program, PATH, None).name == "classify"
    # a file that marks functions exports no unmarked `forward`, whichever the target
    for target in ("hf", "vllm", "gguf"):
        assert find_function(ws.program, PATH, None, target).name == "classify"
    # and `check --target gguf` checks the function `export --gguf` writes
    ws.set_export_requests({PATH: [(None, {"gguf"})]})
    assert [(it.name, sorted(t)) for it, t in ws.exported(ws.analyze(PATH))] == [("classify", ["gguf"])]
    assert [c for c, _, _ in _errors(ws)] == ["E3301"]
    # W0102: `unused` is read by the exported function only
    ws.set_export_requests({})
    assert [d.code for d in ws.diagnostics(PATH) if d.severity == 2] == []


def test_several_functions_for_one_target_need_fn():
    ws = _ws("""
        @export(hf)
        fn a(m: Classifier, x: [b D]) -> [b C]:
            return linear(x, m.w + m.unused)

        @export(hf, gguf)
        fn b(m: Classifier, x: [b D]) -> [b C]:
            return linear(x, m.w + m.unused)
        """)
    with pytest.raises(ExportError) as e:
        find_function(ws.program, PATH, None, "hf")
    assert e.value.message == "`a`, `b` are all marked @export(hf): choose one with --fn"
    assert find_function(ws.program, PATH, None, "gguf").name == "b"
    assert find_function(ws.program, PATH, "a", "gguf").name == "a"


def test_the_settings_default_targets_apply_to_an_unmarked_forward_only():
    ws = _ws("""
        fn forward(m: Classifier, x: [b D]) -> [b C]:
            return linear(x, m.w + m.unused)
        """)
    assert [(lens.fn, lens.targets) for lens in export_lenses(ws, PATH)] == [("forward", ["hf"])]
    assert ws.set_default_targets({"vllm"}) is True
    assert ws.set_default_targets({"vllm"}) is False
    assert [(lens.fn, lens.targets) for lens in export_lenses(ws, PATH)] == [("forward", ["vllm"])]
    assert [c for c, _, _ in _errors(ws)] == ["E3301"]
    # asked for explicitly, any target takes the unmarked forward
    assert find_function(ws.program, PATH, None, "gguf").name == "forward"
