"""Per-item parsing: a syntax error stays in its item; spans are exact."""
from shapescript_core.syntax import ast as A
from shapescript_core.syntax.parser import parse_file, parse_item, split_items

from support import carets, check, errors


def test_an_error_does_not_spread_past_its_item():
    src = """dim D = 64

fn f(x: [b D]) -> [b D]
    return x

fn g(x: [b D]) -> [b D]:
    return y

fn h(x: [b D]) -> [b D]:
    return f(x)
"""
    # f is broken but still defined: calling it raises nothing
    assert errors(src) == [("E0101", 3), ("E0201", 7)]


def test_each_kind_of_syntax_error():
    assert [c for c, _ in errors("dim D = 64\nfn f(x: [b D]) -> [b D]:\n    return sum(x, over=D\n")] == ["E0104"]
    assert [c for c, _ in errors("dim D = 64\nfn f(x: [b D]) -> [b D]:\n\treturn x\n")] == ["E0103"]
    assert [c for c, _ in errors("dim D = 64\nfn f(x: [b D]) -> [b D]:\n        y = x\n      return y\n")] == ["E0102"]
    assert [c for c, _ in errors('import "a.ss\n')] == ["E0104"]
    assert [c for c, _ in errors("dim D = 64 $\n")] == ["E0101"]
    assert [c for c, _ in errors("x = 1\ndim D = 2\n")] == ["E0101"]


def test_headline_names_what_was_expected_and_found():
    expected, got = carets("""
        dim D = 64
        fn f(x: [b D]) -> [b D]
        #                      ^ E0101
            return x
        """)
    assert {c for c, *_ in got} == {"E0101"}


def test_items_reparse_alone_with_exact_spans():
    text = "dim D = 64\n\n# the function\nfn f(x: [b D]) -> [b D]:\n    return x |> softmax(over=D)\n"
    items = parse_file(text, "t.ss")
    assert [type(i).__name__ for i in items] == ["DimItem", "FnItem"]
    f = items[1]
    assert f.doc == "the function"
    ret = f.body[0]
    call = ret.value
    assert isinstance(call, A.Call) and call.piped
    assert text[f.offset + call.pos[0]:f.offset + call.pos[1]] == "x |> softmax(over=D)"
    assert f.src(call.args[1].pos) == "over=D"
    alone = parse_item(f.text, "t.ss", 0)
    assert alone.src(alone.body[0].value.pos) == "x |> softmax(over=D)"


def test_unchanged_items_are_reused():
    text = "dim D = 64\n\nfn f(x: [b D]) -> [b D]:\n    return x\n\nfn g(x: [b D]) -> [b D]:\n    return x\n"
    items = parse_file(text, "t.ss")
    reuse = {}
    for it in items:
        reuse.setdefault(it.text, []).append(it)
    edited = text.replace("fn f(x: [b D]) -> [b D]:\n    return x", "fn f(x: [b D]) -> [b D]:\n    return -x")
    old_offset = items[2].offset
    again = parse_file(edited, "t.ss", reuse)
    assert again[0] is items[0] and again[2] is items[2] and again[1] is not items[1]
    assert again[2].offset == old_offset + 1


def test_decorators_stay_with_their_function():
    text = "@export(hf)\nfn f(x: [b D]) -> [b D]:\n    return x\n"
    assert len(split_items(text)) == 1
    f = parse_file(text, "t.ss")[0]
    assert [d.name for d in f.decorators] == ["export"] and [a for a, _ in f.decorators[0].args] == ["hf"]


def test_pipe_continuation_lines_and_newlines_in_brackets():
    src = """dim D = 64
dim H = 4
dim Dh = D / H

fn f(x: [b n D],
     w: [D D]) -> [b H n Dh]:
    return x
        |> linear(w)
        |> rearrange(b n (H Dh) -> b H n Dh)
"""
    assert errors(src) == []


def test_a_call_whose_argument_is_in_error_has_a_result_of_unknown_shape():
    # the argument's error is the one diagnostic: the callee's result, whose sizes that
    # argument would have bound, is not [b n D] in the callee's own names (an E0402 before)
    src = """dim D = 4

fn f(x: [b n D]) -> [b n D]:
    return x

fn g(x: [q n D]) -> [q n D]:
    t = sum(x, over=(n, D))
    return f(undefined_name) * t

fn h(x: [q n D], y: [p]) -> [q n D]:
    return f(x) * y
"""
    ws, diags = check(src)
    f = ws.file("/tmp/shapescript-test/case.ss")
    # the other call's arguments are known: its result is checked, in the caller's names
    assert sorted((d.code, f.lines.line_of(d.span.abs_start) + 1, d.message) for d in diags) == [
        ("E0201", 8, "`undefined_name` isn't defined"),
        ("E0402", 11, "can't combine [q n D] with [p]: neither has all the other's axes")]
