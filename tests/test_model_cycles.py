"""E0211: a model that contains itself, directly, through a stack or through other models."""
from support import check, errors


def _found(src: str) -> list:
    ws, diags = check(src)
    f = ws.file("/tmp/shapescript-test/case.ss")
    return [(d.code, d.message, f.lines.line_of(d.span.abs_start) + 1) for d in diags]


def test_a_field_of_its_own_type():
    assert _found("model A:\n    w: [4]\n    inner: A\n") == [("E0211", "`A` contains itself: A.inner → A", 3)]


def test_a_stack_of_itself():
    assert _found("dim L = 2\nmodel A:\n    w: [4]\n    layers: [L] A\n") == [
        ("E0211", "`A` contains itself: A.layers → A", 4)]


def test_a_chain_of_models_reports_every_field_on_it():
    src = "model A:\n    b: B\nmodel B:\n    w: [3]\n    c: C\nmodel C:\n    a: A\n"
    assert _found(src) == [
        ("E0211", "`A` contains itself: A.b → B.c → C.a → A", 2),
        ("E0211", "`B` contains itself: B.c → C.a → A.b → B", 5),
        ("E0211", "`C` contains itself: C.a → A.b → B.c → C", 7)]


def test_a_model_that_only_holds_a_cycle_is_not_on_it():
    src = "model A:\n    a: A\nmodel Outer:\n    x: A\n    y: A\n"
    assert [c for c, _ in errors(src)] == ["E0211"]


def test_through_an_import(tmp_path):
    lib = tmp_path / "lib.ss"
    lib.write_text("model B:\n    a: A\n", encoding="utf-8")
    main = tmp_path / "main.ss"
    src = 'import "lib.ss"\nmodel A:\n    b: B\n'
    assert _found_at(src, str(main)) == [("E0211", "`A` contains itself: A.b → B.a → A", 3)]


def _found_at(src, path):
    ws, diags = check(src, path=path)
    f = ws.file(path)
    return [(d.code, d.message, f.lines.line_of(d.span.abs_start) + 1) for d in diags]


def test_models_holding_others_many_times_are_fine():
    src = ("dim L = 3\nmodel Layer:\n    w: [4]\nmodel Block:\n    a: Layer\n    b: Layer\n"
           "    layers: [L] Layer\nmodel Net:\n    blocks: [L] Block\n    head: Layer\n")
    assert errors(src) == []


def test_a_long_chain_of_models():
    n = 1000
    src = "".join(f"model M{i}:\n    next: M{i + 1}\n" for i in range(n)) + f"model M{n}:\n    back: M0\n"
    ws, diags = check(src)
    assert [d.code for d in diags] == ["E0211"] * (n + 1)
    assert diags[0].message == ("`M0` contains itself: M0.next → M1.next → M2.next → M3.next → M4.next → "
                                "M5.next → M6.next → M7.next → … → M0 (1001 models)")
    assert diags[-1].message.startswith("`M1000` contains itself: M1000.back → M0.next → M1.next")


def test_a_cycle_through_other_cycles():
    src = "model A:\n    b: B\n    c: C\nmodel B:\n    a: A\nmodel C:\n    a: A\n    w: [2]\n"
    assert _found(src) == [
        ("E0211", "`A` contains itself: A.b → B.a → A", 2), ("E0211", "`A` contains itself: A.c → C.a → A", 3),
        ("E0211", "`B` contains itself: B.a → A.b → B", 5), ("E0211", "`C` contains itself: C.a → A.c → C", 7)]
