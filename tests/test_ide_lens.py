"""Export lenses, project settings and semantic tokens, in the core."""
from __future__ import annotations

import pytest

from ide_support import workspace
from shapescript_core.settings import Config, load_config, parse_settings
from shapescript_core.ide.lens import export_lenses, function_at
from shapescript_core.ide.semantic_tokens import semantic_tokens

LM = """\
    dim V = 10
    dim D = 4
    model M:
        e: [V D]

    fn forward(m: M, ids: [b n] Index[V]) -> [b n V]:
        return embedding(ids, m.e) @ m.e
    """


def lens_targets(src, default=None):
    ws, path, _ = workspace(src)
    ws.set_default_targets(default)
    return [(lens.fn, lens.targets) for lens in export_lenses(ws, path)]


def test_an_unmarked_language_model_forward_gets_every_target():
    assert lens_targets(LM) == [("forward", ["hf", "vllm", "gguf", "litert"])]


def test_an_unmarked_forward_without_ids_gets_hf_and_settings_choose():
    src = LM.replace("ids: [b n] Index[V]) -> [b n V]", "ids: [b n D]) -> [b n D]").replace(
        "embedding(ids, m.e) @ m.e", "ids")
    assert lens_targets(src) == [("forward", ["hf"])]
    assert lens_targets(src, default={"gguf", "vllm"}) == [("forward", ["vllm", "gguf"])]


def test_marked_functions_get_their_targets_and_forward_is_no_longer_special():
    src = LM + "\n    @export(gguf, hf)\n    fn other(m: M, ids: [b n] Index[V]) -> [b n V]:\n        return forward(m, ids)\n"
    assert lens_targets(src) == [("other", ["hf", "gguf"])]
    assert lens_targets(src.replace("@export(gguf, hf)", "@export")) == [("other", ["hf", "vllm", "gguf", "litert"])]


def test_the_function_at_the_cursor():
    src = LM.replace("    fn forward", "    @export(hf)\n    fn forward") + \
        "\n    @export(hf)\n    fn other(m: M, ids: [b n] Index[V]) -> [b n V]:\n        return forward($0m, ids)\n"
    ws, path, m = workspace(src)
    assert function_at(ws, path, m[0]) == "other"
    assert function_at(ws, path, 0) is None  # two exportable functions, none under the cursor
    ws, path, _ = workspace(LM)
    assert function_at(ws, path, 0) == "forward"  # the only one


def test_settings_parse_and_report_bad_entries():
    cfg = parse_settings({"defaultTargets": ["hf"], "dims": {"D": 8, "bad": -1, "x y": 2},
                          "export": {"randomWeights": True, "dtype": "f64", "seed": 3}})
    assert cfg.default_targets == ["hf"] and cfg.dims == {"D": 8}
    assert cfg.export == {"random_weights": True, "seed": 3}
    assert len(cfg.problems) == 3
    assert parse_settings({"default_targets": ["onnx"]}).problems
    assert parse_settings("nonsense").problems
    merged = Config(["hf"], {"D": 1, "E": 2}).merged(Config(None, {"D": 3}))
    assert merged.default_targets == ["hf"] and merged.dims == {"D": 3, "E": 2}


def test_shapescript_toml(tmp_path):
    assert load_config(str(tmp_path)) == Config()
    (tmp_path / "shapescript.toml").write_text('default_targets = "gguf"\n[dims]\nL = 2\n', encoding="utf-8")
    cfg = load_config(str(tmp_path))
    assert cfg.default_targets == ["gguf"] and cfg.dims == {"L": 2}
    (tmp_path / "shapescript.toml").write_text("[dims\n", encoding="utf-8")
    assert load_config(str(tmp_path)).problems[0].startswith("shapescript.toml: ")


@pytest.mark.parametrize("word,kind", [("dim", "keyword"), ("V", "variable"), ("M", "type"), ("e", "property"),
                                       ("forward", "function"), ("m", "parameter"), ("b", "typeParameter"),
                                       ("Index", "type"), ("embedding", "function"), ("10", "number")])
def test_semantic_tokens(word, kind):
    ws, path, _ = workspace(LM)
    text = ws.file(path).text
    kinds = {(text[t.start:t.end], t.type) for t in semantic_tokens(ws, path)}
    assert (word, kind) in kinds
    toks = semantic_tokens(ws, path)
    assert [t.start for t in toks] == sorted(t.start for t in toks)
    assert all(a.end <= b.start for a, b in zip(toks, toks[1:]))
