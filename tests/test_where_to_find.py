"""Each feature the structure's second step named is found from folder and file names in
at most two steps below `shapescript_core/` (a folder, then a file; or two folders), and
the file found holds it (docs/architecture.md, "Where to find X")."""
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shapescript_core")

# feature -> (the path from shapescript_core/, a name the file defines)
WHERE = {
    "E3304": ("serving/e3304_token_axes.py", "E3304"),
    "make model first parameter": ("check/codes/e3306_model_first.py", "def model_first"),
    "GGUF tensor naming": ("gguf_format/names.py", "def tensor_name"),
    "the vLLM tensor-parallel plan": ("compile/parallel_plan.py", "def plan_parallel"),
    "hover text": ("ide/hover.py", "def hover"),
    "rename": ("ide/rename.py", "def rename"),
    "the reference evaluator": ("evaluate/interpreter.py", "def "),
    "importing a Hugging Face checkpoint by role": ("weights/hf_checkpoint.py", "class HFCheckpoint"),
    "LiteRT export": ("export/litert/writer.py", "def write"),
}


@pytest.mark.parametrize("feature", sorted(WHERE))
def test_a_feature_is_two_steps_away(feature):
    rel, marker = WHERE[feature]
    folders = rel.split("/")[:-1]
    assert len(folders) <= 2, f"{feature}: {rel} is {len(folders) + 1} steps deep"
    path = os.path.join(ROOT, *rel.split("/"))
    assert os.path.isfile(path), f"{feature}: {rel} is gone (update docs/architecture.md and this table)"
    with open(path, encoding="utf-8") as fh:
        assert marker in fh.read()


def test_the_docs_say_where_each_feature_is():
    with open(os.path.join(os.path.dirname(ROOT), "docs", "architecture.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert [f for f, (rel, _) in WHERE.items() if rel not in text] == []
