"""Property: any program that checks clean exports a model that loads and computes the
checked program, whatever its names. Names are drawn from Python's keywords, builtins,
`dir(nn.Module)`, `dir(PreTrainedModel)` and random identifiers (Unicode ones too: the
language takes ASCII names, so those must be refused by the checker, never crash the
export), and put in every role: a dim, a field (a param path), a function, a parameter,
a local and a loop variable. The export, with the reference weights renamed to the new
param paths, must load in transformers (trust_remote_code=True) and give the logits of
the unrenamed program."""
from __future__ import annotations

import builtins
import itertools
import json
import keyword
import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from security_support import TINY  # noqa: E402
from shapescript_core.cli import main  # noqa: E402
from shapescript_core.diagnostics import Severity  # noqa: E402
from shapescript_core.workspace import Workspace  # noqa: E402

TAKEN = set(re.findall(r"[A-Za-z_]\w*", TINY))  # a name the program has already would change its meaning
POOL = sorted({n for n in keyword.kwlist + keyword.softkwlist + dir(builtins) + dir(torch.nn.Module)
               + dir(transformers.PreTrainedModel) + ["num_labels", "use_return_dict", "ShapeScriptLlamaConfig",
                                                      "modeling_llama", "input_ids", "past_key_values"]
               if n.isidentifier()} - TAKEN)
_POOL = st.sampled_from(POOL)
NAMES = st.one_of(_POOL, _POOL, _POOL, _POOL, st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,10}\Z"),
                  st.text(st.characters(categories=("Lu", "Ll", "Lo")), min_size=1, max_size=4))
ROLES = ("dim", "field", "fn", "param", "local", "loop")
IDS = torch.tensor([[1, 2, 3, 4, 5]])
_count = itertools.count()
EXAMPLES = [dict(zip(ROLES, ["class", "__dict__", "super", "self", "kwargs", "training"])),
            dict(zip(ROLES, ["num_labels", "forward_", "ShapeScriptLlamaConfig", "input_ids", "past_key_values",
                             "__name__"]))]


def _program(names: dict) -> str:
    src = TINY
    subs = {"dim": r"\bF\b", "field": r"\bw_up\b", "param": r"\bp\b", "local": r"\bq\b", "loop": r"\blayer\b"}
    for role, pattern in subs.items():
        src = re.sub(pattern, names[role].replace("\\", "\\\\"), src)
    return src.replace("fn mlp(", f"fn {names['fn']}(").replace("x + mlp(", f"x + {names['fn']}(")


def _logits(out):
    model = transformers.AutoModelForCausalLM.from_pretrained(str(out), trust_remote_code=True).eval()
    with torch.no_grad():
        return model(input_ids=IDS, use_cache=False).logits


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    from safetensors.numpy import load_file, save_file
    tmp = tmp_path_factory.mktemp("property")
    (tmp / "tiny.ss").write_text(TINY)
    assert main(["export", str(tmp / "tiny.ss"), "--hf", "--random-weights", "-o", str(tmp / "ref")]) == 0
    keys = json.loads((tmp / "ref" / "shapescript-weights.json").read_text())["keys"]
    sd = load_file(str(tmp / "ref" / "model.safetensors"))
    weights = {p: sd[k] for p, k in keys.items()}
    return tmp, weights, _logits(tmp / "ref"), save_file


@settings(max_examples=12, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(NAMES, min_size=len(ROLES), max_size=len(ROLES), unique=True))
@example(["class", "__dict__", "super", "self", "kwargs", "training"])
@example(["num_labels", "forward_", "ShapeScriptLlamaConfig", "input_ids", "past_key_values", "__name__"])
def test_every_clean_program_exports_a_model_that_loads_and_computes(reference, names):
    tmp, weights, want, save_file = reference
    names = dict(zip(ROLES, names))
    hypothesis.assume(not set(names.values()) & TAKEN)
    src = _program(names)
    case = tmp / f"case{next(_count)}"
    case.mkdir()
    path = case / "m.ss"
    path.write_text(src, encoding="utf-8")
    if [d for d in Workspace().diagnostics(str(path)) if d.severity == Severity.ERROR]:
        assert names not in EXAMPLES, names  # the explicit examples check clean
        return  # the checker refused the name: nothing to export
    renamed = {re.sub(r"\.w_up$", "." + names["field"], p): w for p, w in weights.items()}
    save_file(renamed, str(case / "w.safetensors"))
    code = main(["export", str(path), "--hf", "--weights", str(case / "w.safetensors"), "-o", str(case / "out")])
    assert code == 0, names
    got = _logits(case / "out")
    assert got.shape == want.shape and (got - want).abs().max().item() < 1e-5, names
