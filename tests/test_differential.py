"""Differential testing: random well-typed programs, their --hf export against the
reference evaluator (docs/evaluate.md). A fixed-seed sample of tests/progen.py's
programs, and every regression case the testing found (tests/programs/differential/,
each shrunk by tests/shrink.py and named for its bug). bench/differential.py runs more."""
from __future__ import annotations

import os
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from differential_support import case_from_text, quiet, run_case, run_gguf  # noqa: E402
from progen import generate, llama_case  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "programs", "differential")
SAMPLE = 120  # seeds 0 … SAMPLE-1: half language models (KV cache too), half plain functions


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    quiet()
    return str(tmp_path_factory.mktemp("differential"))


@pytest.mark.parametrize("seed", range(SAMPLE))
def test_random_program_export_agrees_with_the_evaluator(seed, tmp):
    case = generate(seed)
    res = run_case(case, tmp)
    assert res["checked"], f"seed {seed}: the generator made a program that does not check:\n{case.source}"
    status, why = res["hf"]
    assert status == "agree", f"seed {seed}: {why}\n{case.source}"


@pytest.mark.parametrize("seed", range(3))
def test_llama_shaped_program_gguf_agrees_with_the_evaluator(seed, tmp):
    """--gguf through llama.cpp, on llamas whose scalar keywords are written many ways."""
    pytest.importorskip("llama_cpp")
    case = llama_case(seed)
    res = run_gguf(case, tmp)
    assert res["checked"], f"seed {seed}: does not check:\n{case.source}"
    status, why = res["gguf"]
    assert status == "agree", f"seed {seed}: {why}\n{case.source}"


def regression_cases() -> list:
    return sorted(f for f in os.listdir(CASES) if f.endswith(".ss")) if os.path.isdir(CASES) else []


@pytest.mark.parametrize("name", regression_cases())
def test_regression_case_agrees(name, tmp):
    text = open(os.path.join(CASES, name)).read()
    case = case_from_text(text)
    target = "gguf" if "target=gguf" in text.split("\n", 1)[0] else "hf"
    res = (run_gguf if target == "gguf" else run_case)(case, tmp)
    assert res["checked"], f"{name} does not check"
    status, why = res[target]
    assert status == "agree", f"{name}: {why}"


def test_the_generator_covers_the_language():
    """The sample reaches every builtin, every pattern form and every scalar-keyword source."""
    from shapescript_core.check.builtins import BUILTINS
    text = "\n".join(generate(s).source for s in range(SAMPLE))
    missing = [b for b in BUILTINS if not re.search(rf"\b{b}\b", text)]
    assert not missing, f"no sampled program calls {missing}"
    for form in ("eps=s", "theta=s", "scale=s", "eps=1 / D", "for layer in m.layers", "-> [p q D]",
                 'style="interleaved"', "(Hkv G)", "split(", "masked_fill(!causal", 'scaling="llama3"',
                 'scaling="yarn"', 'scaling="linear"', "rotary_dims=", "softcap=", "softcap("):
        assert form in text, form


CONDITIONED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "differential_conditioned")


@pytest.mark.parametrize("name", sorted(os.listdir(CONDITIONED)))
def test_a_program_that_amplifies_rounding_is_told_from_a_miscompile(name, tmp):
    """Shrunk from the long runs' disagreements (issue 32): a quantity that is 0 exactly
    (a centered sum: in one order of additions exactly 0, in another not) times the
    output, a `where`/`argmax` that flips behind the program's own cast to f32, a rope
    whose theta is computed at run time in a program that amplifies its table's rounding
    10^4 times (one of them feeding a `one_hot` to a linear: the export's f64 run needs
    one_hot in the loaded type, not `.float()`), and from issue 33's last runs a number
    passed to a parameter `s: []` and the norms' and the softmax's float32 work, which
    rounded in the export's f64 run. The export in f64 computes the evaluator's f64
    function (or differs only where the program's own casts to f16/bf16 round), and a nudge of a few rounding units of the inputs
    or of each operation's result moves the evaluator as far: "conditioned", not
    "disagree" (nor "agree": f32 can't tell)."""
    case = case_from_text(open(os.path.join(CONDITIONED, name)).read())
    status, why = run_case(case, tmp)["hf"]
    assert status == "conditioned", why
    assert "in f64" in why


def test_a_different_function_is_never_called_conditioned(tmp):
    """The teeth of the above: the export of a program that computes another function
    (a constant added where the original's sum cancels, as a miscompile would) is not
    explained away by the same program's sensitivity, however large."""
    import dataclasses
    from differential_support import conditioned, evaluator_outputs, export, f64_outputs, hf_outputs, rel_error
    case = case_from_text(open(os.path.join(CONDITIONED, "cancellation_exact_in_one_order.ss")).read())
    other = dataclasses.replace(case, source=case.source.replace("tanh(sum(x))", "tanh(sum(x) + 0.001)"))
    assert other.source != case.source
    prog, weights, inputs, want = evaluator_outputs(case)
    out = os.path.join(tmp, "miscompiled")
    assert export(other, weights, out).ok
    got = hf_outputs(other, out, inputs)["full"]
    bad = {"full": rel_error(got, want)}
    assert bad["full"] > 1e-5
    assert conditioned(case, prog, weights, inputs, want, f64_outputs(case, prog, weights, inputs), out, bad) == {}
