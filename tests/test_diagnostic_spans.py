"""Primary spans of the core diagnostics, written as carets under the code."""
import pytest

from support import carets, check

FIXTURES = {
    "E0201 and E0204": """
        dim D = 64
        model M:
            w: [D D]
        fn f(m: M, x: [b D]) -> [b D]:
            y = m.v
        #         ^ E0204
            return linear(x, q)
        #                    ^ E0201
        """,
    "E0302 and E0303": """
        dim V = 10
        dim D = 4
        model M:
            e: [V D]
            w: [D] bf16
        fn f(m: M, ids: [b] Index[V]) -> [b D]:
            x = embedding(ids, m.e)
            y = x * m.w
        #       ^^^^^^^ E0302
            z = ids + 1
        #       ^^^ E0303
            return x
        """,
    "E0405 at the lost name": """
        dim D = 4
        fn f(x: [b n D]) -> [b n]:
            return x |> rearrange(b n D -> b n)
        #                             ^ E0405
        """,
    "E0407 at the side": """
        dim D = 4
        fn f(x: [b n D]) -> [b n D]:
            return x |> rearrange(b n -> b n)
        #                         ^^^ E0407
        """,
    "E0409 at the returned expression": """
        dim D = 4
        dim F = 8
        fn g(x: [b n D]) -> [b n F]:
            return x
        #          ^ E0409
        """,
    "E0206 at the call": """
        dim D = 4
        fn f(x: [b D]) -> [b D]:
            return softmax(x, over=D, along=D)
        #                             ^^^^^^^ E0206
        """,
    "E0403 on the line of a piped call": """
        dim D = 64
        dim F = 32
        fn f(x: [b n D], w: [F F]) -> [b n F]:
            return x
                |> relu
                |> matmul(w)
        #          ^^^^^^^^^ E0403
        """,
    "E0202 at the free name": """
        dim D = 4
        model M:
            w: [n D]
        #       ^ E0202
        """,
}


@pytest.mark.parametrize("name", list(FIXTURES))
def test_spans(name):
    expected, got = carets(FIXTURES[name])
    assert expected == got


def test_one_mistake_one_diagnostic():
    # the unknown callee's result is unknown: nothing downstream complains
    _, diags = check("""dim D = 4
fn f(x: [b n D]) -> [b n D]:
    y = nosuch(x) |> softmax(over=zz) |> rearrange(a b c d -> a)
    z = y + x * 2.0
    return z
""")
    assert [d.code for d in diags if d.severity == 1] == ["E0205"]


def test_suggestions_name_the_closest_builtin():
    _, diags = check("dim D = 4\nfn f(x: [b D]) -> [b D]:\n    return softmx(x, over=D)\n")
    assert diags[0].helps == ["there is a function with a similar name: `softmax`"]


def test_unused_local_and_unread_field_warnings():
    _, diags = check("""dim D = 4
model M:
    w: [D D]
    extra: [D] = zeros

@export(hf)
fn forward(m: M, x: [b D]) -> [b D]:
    h = x * 2.0
    _quiet = x
    return linear(x, m.w)
""")
    assert sorted((d.code, d.message) for d in diags) == [
        ("W0101", "`h` is never used"), ("W0102", "no exported function reads `extra`")]
    assert all(d.severity == 2 for d in diags)


def test_typo_fixes_write_the_suggestion_but_are_not_applied_by_default():
    from shapescript_core.diagnostics import Applicability
    from shapescript_core.apply_fixes import apply_edits, safe_fix_edits
    src = "dim D = 4\nfn f(x: [b D]) -> [b D]:\n    return softmx(x, over=D)\n"
    ws, diags = check(src)
    (fix,) = diags[0].fixes
    assert fix.title == "Replace with `softmax`" and fix.applicability == Applicability.UNSAFE
    assert safe_fix_edits(diags) == {}
    fixed = apply_edits(src, list(fix.edits))
    assert "return softmax(x, over=D)" in fixed
    assert check(fixed)[1] == []


def test_unused_local_fix_renames_it():
    from shapescript_core.apply_fixes import apply_edits
    src = "dim D = 4\nfn f(x: [b D]) -> [b D]:\n    h = x\n    return x\n"
    _, diags = check(src)
    (d,) = diags
    assert d.fixes[0].title == "Rename to `_h`"
    assert check(apply_edits(src, list(d.fixes[0].edits)))[1] == []
