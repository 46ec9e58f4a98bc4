"""Programs as deep or as wide as a user may write them: every check runs on explicit
stacks (no RecursionError turned into a clean file), and nothing grows worse than
n log n in the size of a type. A check that fails anyway is one E0001 and a log record."""
import logging

import pytest

from shapescript_core.check import function as checker_module
from shapescript_core.serving import e3304_token_axes as token_module
from support import check, errors


def _call_chain(n: int) -> str:
    """forward → f0 → f1 → … → f(n-1), whose softmax runs over the token axis (E3304),
    and forward's logits go through a softmax after the output layer (E3302)."""
    head = "dim V = 100\ndim D = 8\nmodel M:\n    e: [V D]\n    w: [V D]\n"
    fns = []
    for i in range(n):
        body = f"    return f{i + 1}(m, x)\n" if i + 1 < n else "    return softmax(x, over=n)\n"
        fns.append(f"fn f{i}(m: M, x: [b n D]) -> [b n D]:\n{body}")
    fwd = ("@export(vllm)\nfn forward(m: M, ids: [b n] Index[V]) -> [b n V]:\n"
           "    x = embedding(ids, m.e)\n    return linear(f0(m, x), m.w) |> softmax(over=V)\n")
    return head + "".join(fns) + fwd


@pytest.mark.parametrize("n", [3, 200, 1000])
def test_deep_call_chains_keep_their_export_errors(n):
    # the deepest function's line: 5 header lines, 2 lines per function
    assert errors(_call_chain(n)) == [("E3302", 5 + 2 * n + 4), ("E3304", 5 + 2 * n)]


def test_a_long_pipe_is_valid_and_its_last_step_is_checked():
    ok = "dim D = 8\nfn f(x: [n D]) -> [n D]:\n    return x" + " |> relu" * 300 + "\n"
    assert errors(ok) == []
    bad = ok.replace("relu\n", "sum(over=D)\n")
    ws, diags = check(bad)
    assert [(d.code, d.message) for d in diags] == [
        ("E0409", "`f` returns [n], but its signature says [n D]")]


def test_a_long_pipe_split_over_lines():
    src = "dim D = 8\nfn f(x: [n D]) -> [n D]:\n    return x\n" + "        |> gelu\n" * 300
    assert errors(src) == []


def test_a_thousand_term_sum():
    ok = "dim D = 8\nfn f(x: [n D], y: [D]) -> [n D]:\n    return x" + " + y" * 999 + "\n"
    assert errors(ok) == []
    # one wrong operand at the far end of the chain is found
    bad = "dim D = 8\ndim F = 4\nfn f(x: [n D], y: [D], z: [F]) -> [n D]:\n    return x" + " + y" * 999 + " + z\n"
    ws, diags = check(bad)
    assert [d.code for d in diags] == ["E0402"]
    assert diags[0].message == "can't combine [n D] with [F]: neither has all the other's axes"


def test_deep_nesting_of_calls_arguments_and_operators():
    deep = {
        "calls": "relu(" * 1000 + "x" + ")" * 1000,
        "second arguments": "maximum(x, " * 500 + "x" + ")" * 500,
        "negations": "-" * 1000 + "x",
        "parentheses": "(" * 500 + "x" + ")" * 500,
    }
    for what, e in deep.items():
        assert errors(f"dim D = 8\nfn f(x: [n D]) -> [n D]:\n    return {e}\n") == [], what


def test_deep_dims_and_sizes():
    chain = "".join(f"dim d{i} = d{i + 1} + 1\n" for i in range(1000)) + "dim d1000 = 2\n"
    assert errors(chain + "fn f(x: [d0]) -> [d1000 + 1000]:\n    return x\n") == []
    cycle = "".join(f"dim d{i} = d{i + 1} + 1\n" for i in range(1000)) + "dim d1000 = d0\n"
    assert [c for c, _ in errors(cycle)] == ["E0208"] * 1001
    total = "+".join(["1"] * 1000)
    assert errors(f"dim X = {total}\nfn f(x: [X]) -> [{total}]:\n    return x\n") == []
    assert errors(f"fn f(x: [n]) -> [{'+'.join(['n'] * 1000)}]:\n    return x\n") == [("E0409", 2)]


def test_deeply_nested_pattern_groups():
    src = "fn f(x: [a]) -> [a]:\n    return x |> rearrange(" + "(" * 1000 + "a" + ")" * 1000 + " -> a)\n"
    ws, diags = check(src)
    assert [d.code for d in diags] == ["E0406"]


def test_four_hundred_axes():
    # cubic before (100 axes: 1.3 s, 200: 8 s); now milliseconds: bench/big_types.py times it
    axes = " ".join(f"a{i}" for i in range(400))
    src = (f"fn g(x: [{axes}]) -> [{axes} q]:\n    return x |> rearrange({axes} -> {axes} q)\n"
           f"fn f(x: [{axes}]) -> [{axes}]:\n    return g(x)\n")
    ws, diags = check(src)
    assert [(d.code, d.message) for d in diags] == [
        ("E0405", "`rearrange` adds axis `q`"),
        ("E0409", f"`f` returns [{axes} q], but its signature says [{axes}]")]


# ---------------------------------------------------------------- internal errors
OK = "dim D = 8\nfn f(x: [n D]) -> [n D]:\n    return relu(x)\nfn g(x: [n D]) -> [n D]:\n    return x\n"


def test_a_checker_bug_is_one_E0001_at_the_function_and_a_log_record(monkeypatch, caplog):
    def broken(self, e):
        raise KeyError("boom")
    monkeypatch.setattr(checker_module.FnChecker, "_unop", broken)
    monkeypatch.delenv("SHAPESCRIPT_DEBUG", raising=False)
    src = OK.replace("relu(x)", "-x")
    with caplog.at_level(logging.ERROR, logger="shapescript"):
        ws, diags = check(src)
    assert [(d.code, d.message) for d in diags] == [
        ("E0001", "the check of `f` could not complete: internal error (KeyError: 'boom')")]
    f = ws.file("/tmp/shapescript-test/case.ss")
    assert f.lines.line_col(diags[0].span.abs_start) == (1, 3)  # at `f`'s name
    records = [r for r in caplog.records if r.name == "shapescript"]
    assert len(records) == 1 and records[0].exc_info[0] is KeyError


def test_an_export_check_bug_is_E0001_not_a_clean_file(monkeypatch, caplog):
    def broken(self, res, env):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(token_module.TokenFlow, "run_exported", broken)
    monkeypatch.delenv("SHAPESCRIPT_DEBUG", raising=False)
    with caplog.at_level(logging.ERROR, logger="shapescript"):
        ws, diags = check(_call_chain(3))
    assert [(d.code, d.message) for d in diags] == [
        ("E0001", "the export checks of `forward` could not complete: internal error "
                  "(RecursionError: maximum recursion depth exceeded)")]
    assert diags[0].span.anchor.name == "forward"
    assert any(r.exc_info and r.exc_info[0] is RecursionError for r in caplog.records)


def test_debug_mode_raises_instead(monkeypatch):
    def broken(self, e):
        raise KeyError("boom")
    monkeypatch.setattr(checker_module.FnChecker, "_unop", broken)
    monkeypatch.setenv("SHAPESCRIPT_DEBUG", "1")
    with pytest.raises(KeyError):
        check(OK.replace("relu(x)", "-x"))


def test_deeply_nested_tuples_render_in_hints_and_completions():
    from shapescript_core.ide.completion import completions
    from shapescript_core.ide.inlay import inlay_hints
    src = "dim D = 8\nfn f(x: [n D]) -> [n D]:\n    t = " + "(x, " * 600 + "x" + ")" * 600 + "\n    return x\n"
    ws, diags = check(src)
    assert [d.code for d in diags] == ["W0101"]
    shown = "([n D], " * 600 + "[n D]" + ")" * 600
    (hint,) = inlay_hints(ws, "/tmp/shapescript-test/case.ss")
    assert hint.tooltip == "t: " + shown
    (t,) = [c for c in completions(ws, "/tmp/shapescript-test/case.ss", src.index("return x") + 7) if c.label == "t"]
    assert t.detail == shown


def test_deeply_nested_loops():
    n = 300
    head = "model B:\n    w: [4]\nmodel M:\n    l: [2] B\nfn f(m: M, x: [4]) -> [4]:\n"
    loops = "".join("    " * (i + 1) + f"for b{i} in m.l:\n" for i in range(n))
    body = "    " * (n + 1) + "x = x + " + " + ".join(f"b{i}.w" for i in range(n)) + "\n    return x\n"
    assert errors(head + loops + body) == []
    assert errors(head + loops + body.replace("x = x + ", "x = x + m + ")) == [("E0301", 6 + n)]
