"""Generated files get every outside string as data: the escaping functions (one per
format) and the one identifier mapping, checked against the real classes."""
from __future__ import annotations

import ast
import builtins
import inspect
import json
import keyword
import shlex
import tomllib

import pytest

from shapescript_core.compile.names import FRAMEWORK_NAMES, Scope, module_stem, py_ident, reserved
from shapescript_core.escape import (EscapeError, json_text, md_code, py_comment, py_docstring, py_float,
                                     py_str, shell_arg, toml_str)

HOSTILE = ['x""";__import__("os").system("id");"""y', "a\\N{b}", "line\nbreak", "cr\rlf", "nul\0byte",
           "sep\u2028par\u2029", "tab\there", "quote'\"", "bs\\", '"', '"""', "\x1b[31mred", "ü é 漢字",
           "\ud800 lone surrogate", "", "   "]


@pytest.mark.parametrize("text", HOSTILE)
def test_python_literals_comments_and_docstrings_hold_any_text_as_data(text):
    tree = ast.parse(f"x = {py_str(text)}\n")
    assert ast.literal_eval(tree.body[0].value) == text
    doc = py_docstring(f"from `{text}`.")
    mod = ast.parse(f"{doc}\nX = 1\n")
    assert len(mod.body) == 2 and isinstance(mod.body[0].value, ast.Constant)
    assert ast.get_docstring(mod, clean=False) == f"from `{text}`."
    comment = py_comment(text)
    assert "\n" not in comment and "\r" not in comment and "\0" not in comment
    assert len((comment + "\nX = 1").splitlines()) == 2
    assert [type(s) for s in ast.parse(f"# {comment}\nX = 1\n").body] == [ast.Assign]


@pytest.mark.parametrize("text", HOSTILE)
def test_toml_json_shell_and_markdown_hold_any_text_as_data(text):
    safe = text.replace("\ud800", "\ufffd")
    assert tomllib.loads(f"k = {toml_str(text)}\n") == {"k": safe}
    assert json.loads(json_text({"k": text})) == {"k": text}
    assert shlex.split(f"pip install {shell_arg(text)}") == ["pip", "install", text]
    code = md_code(text)
    assert "\n" not in code and code.startswith("`") and code.endswith("`")


def test_numbers_are_finite_or_an_error():
    assert py_float(1e-5) == "1e-05" and py_float(500000.0) == "500000.0"
    for bad in (float("inf"), float("-inf"), float("nan"), 1e999):
        with pytest.raises(EscapeError, match="not a finite number"):
            py_float(bad, "`eps`")
    with pytest.raises(EscapeError):
        json_text({"x": float("inf")})


def _framework_names() -> set:
    """The public attributes of the classes a generated module's names live among."""
    from torch import nn
    from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel

    class Config(PretrainedConfig):
        model_type = "shapescript_names_test"

    class Model(PreTrainedModel, GenerationMixin):
        config_class = Config

        def __init__(self, config):
            super().__init__(config)
            self.post_init()

    names = set(dir(nn.Module)) | set(dir(PreTrainedModel)) | set(dir(GenerationMixin)) | set(dir(PretrainedConfig))
    names |= set(vars(Model(Config()))) | set(vars(Config())) | set(vars(nn.Module()))
    names |= set(inspect.signature(PretrainedConfig.__init__).parameters)
    return {n for n in names if not n.startswith("_")}


def test_the_framework_table_covers_the_installed_classes():
    missing = _framework_names() - FRAMEWORK_NAMES - set(dir(builtins))
    assert missing == set(), f"add to FRAMEWORK_NAMES in compile/names.py: {sorted(missing)}"


def test_no_generated_name_is_reserved():
    import torch.nn as nn
    from transformers import PreTrainedModel
    pool = (keyword.kwlist + keyword.softkwlist + dir(builtins) + dir(nn.Module) + dir(PreTrainedModel)
            + ["class_", "ｃｌａｓｓ", "ﬁ", "fi", "x²", "_x", "__x", "__dict__", "u__dict__", "Ω", "a-b",
               "ShapeScriptLlamaConfig", "ShapeScriptLlamaConfig_", "uShapeScriptLlamaConfig"])
    scope = Scope()
    got = {n: scope(n) for n in pool}
    for src, py in got.items():
        assert py.isidentifier() and not keyword.iskeyword(py) and not keyword.issoftkeyword(py), (src, py)
        assert not py.startswith("_") and py not in dir(builtins) and py not in FRAMEWORK_NAMES, (src, py)
        assert not reserved(py) and py == py_ident(py), (src, py)
    assert len(set(got.values())) == len(got)  # no two source names share one Python name
    assert py_ident("class") == "class_" and py_ident("D") == "D" and py_ident("num_labels") == "num_labels_"
    assert module_stem("Llama") == "llama" and module_stem("Ωmega").isascii()


def test_every_name_the_prelude_defines_is_reserved():
    """A source name never shadows a helper of the generated file (a local `topk` or
    `window_mask` in a method would call itself instead)."""
    import re
    from shapescript_core.compile import prelude
    texts = list(prelude.HELPERS.values()) + [v for k, v in vars(prelude).items()
                                              if k.startswith("VLLM_") and isinstance(v, str)]
    defined = set()
    for t in texts:
        defined |= set(re.findall(r"^(?:def|class) (\w+)", t, re.M)) | set(re.findall(r"^(\w+) = ", t, re.M))
    assert {"topk", "expert_einsum", "written_attention", "window_mask"} <= defined
    assert [n for n in sorted(defined) if not reserved(n)] == []
    assert py_ident("experts") == "experts_"  # vLLM's Transformers backend would swap such a module
