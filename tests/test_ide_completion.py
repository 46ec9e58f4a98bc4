"""Completion and signature help in the core, on text as it is being typed."""
from __future__ import annotations

import pytest

from ide_support import workspace
from shapescript_core.ide.completion import completions, enclosing_call, signature_help

LIB = """\
    dim D = 64
    dim V = 100

    model Attn:
        wq: [D D]
        wo: [D D]
    """

HEAD = """\
    import "lib.ss"

    model Net:
        embed: [V D]
        attn: Attn

    fn encode(m: Net, ids: [b n] Index[V]) -> [b n D]:
        x = embedding(ids, m.embed)
        LINE
        return x

    fn helper(m: Net, x: [b n D]) -> [b n D]:
        return x
    """


def complete(line: str, **kw):
    ws, path, m = workspace(HEAD.replace("LINE", line), lib=LIB, **kw)
    return {c.label: c for c in completions(ws, path, m[0])}


def test_fields_after_a_dot_while_the_function_does_not_parse():
    items = complete("y = m.$0")
    assert set(items) == {"embed", "attn"}
    assert items["embed"].kind == "field" and items["embed"].detail == "[V D] f32"


def test_fields_of_a_field_from_an_imported_model():
    assert set(complete("y = m.attn.$0")) == {"wq", "wo"}
    assert set(complete("y = linear(x, m.attn.w$0")) == {"wq", "wo"}


def test_fields_of_a_loop_variable_and_a_partial_name():
    assert set(complete("y = m.em$0")) == {"embed"}


def test_names_in_an_expression():
    items = complete("y = $0")
    assert {"x", "m", "ids", "D", "V", "linear", "embedding", "encode", "helper", "f16"} <= set(items)
    assert items["x"].kind == "local" and items["x"].detail == "[b n D] f32"
    assert items["m"].kind == "param" and items["m"].detail == "Net"
    assert items["D"].kind == "dim" and items["D"].detail == "dim D = 64"
    assert items["linear"].kind == "builtin" and items["linear"].detail == "linear(x, W, b=None)"
    assert "Net" not in items  # a model is not a value


def test_a_prefix_filters():
    items = complete("y = emb$0")
    assert set(items) == {"embedding"}


def test_locals_bound_later_are_not_offered():
    items = complete("y = $0\n        z = x")
    assert "z" not in items and "x" in items


def test_types_in_a_type_position():
    items = complete("y: [b n $0] = x")
    assert {"D", "V", "b", "n"} <= set(items) and "linear" not in items


def test_keyword_arguments_of_the_call():
    items = complete("y = softmax(x, o$0)")
    assert items["over"].kind == "argument" and items["over"].insert == "over="


def test_v03_keywords_are_offered_in_rope_and_the_attention():
    """rope's rotary_dims, scaling and each scaling's keywords; the attention's softcap."""
    items = complete("y = rope(x, pos, $0)")
    assert {"theta", "style", "rotary_dims", "scaling", "factor", "low_freq_factor", "high_freq_factor",
            "original_positions", "beta_fast", "beta_slow", "attention_factor"} <= set(items)
    assert items["rotary_dims"].kind == "argument" and items["scaling"].insert == "scaling="
    ws, path, m = workspace(HEAD.replace("LINE", "y = scaled_dot_product_attention(x, x, x, softc$0)"), lib=LIB)
    found = [(c.kind, c.insert) for c in completions(ws, path, m[0]) if c.label == "softcap"]
    assert ("argument", "softcap=") in found  # beside the builtin softcap(x, c)
    assert complete("y = scaled_dot_product_attention(x, x, x, $0)")["sinks"].insert == "sinks="


def test_v03_mixture_builtins_and_their_keywords_are_offered():
    """topk and take (§6.2) by name; topk's k= and over=, take's over=."""
    items = complete("y = t$0")
    assert items["topk"].kind == "builtin" and items["take"].kind == "builtin"
    items = complete("w, e = topk(x, $0)")
    assert items["k"].insert == "k=" and items["over"].insert == "over="
    assert complete("y = take(x, i, $0)")["over"].insert == "over="


def test_item_keywords_at_the_start_of_a_line():
    ws, path, m = workspace("dim D = 4\n$0")
    assert {c.label for c in completions(ws, path, m[0])} == {"dim", "model", "fn", "import"}


def test_nothing_in_a_comment():
    assert complete("# y = $0") == {}


def sig(line: str):
    ws, path, m = workspace(HEAD.replace("LINE", line), lib=LIB)
    return signature_help(ws, path, m[0])


def test_signature_help_for_a_builtin():
    s = sig("y = rms_norm(x, m.embed, $0")
    assert s.label == "rms_norm(x, w, over=A, eps=1e-06)"
    assert [s.label[a:b] for a, b in s.params] == ["x", "w", "over=A", "eps=1e-06"]
    assert s.active == 2 and "RMS normalization" in s.doc


@pytest.mark.parametrize("line,active", [
    ("y = x |> rms_norm(m.embed, $0", 2),  # the piped value is the first argument
    ("y = rms_norm(x, eps=$0", 3),  # a keyword argument
    ("y = rms_norm(linear(x, m.attn.wq), $0", 1),  # after a nested call
    ("y = rms_norm(x, (1, 2), $0", 2),  # commas inside parentheses don't count
    ("y = rearrange(x, b n $0", 1),  # in the pattern
    ("y = rearrange(x, b (n$0", 1),  # in a group of the pattern
])
def test_the_active_parameter(line, active):
    assert sig(line).active == active


def test_signature_help_for_a_function_of_the_file():
    s = sig("y = helper(m, $0")
    assert s.label == "helper(m: Net, x: [b n D]) -> [b n D]"
    assert s.active == 1


def test_no_signature_outside_calls():
    assert sig("y = x$0") is None
    assert sig("y = linear(x, m.attn.wq)$0") is None


def test_enclosing_call_ignores_strings_and_comments():
    ws, path, _ = workspace(HEAD, lib=LIB)
    env = ws.analyze(path).env
    assert enclosing_call('y = rope(x, style="(,,"', env).index == 1
    assert enclosing_call("y = f(  # linear(\n", env) is None
