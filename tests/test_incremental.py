"""The workspace cache: an edit re-parses the touched item and re-checks what depends on it."""
from shapescript_core.workspace import Workspace

SRC = """dim D = 64
dim F = 128

model Mlp:
    w_up: [F D]
    w_down: [D F]

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return linear(x, p.w_up) |> relu |> linear(p.w_down)

fn twice(p: Mlp, x: [b n D]) -> [b n D]:
    return mlp(p, mlp(p, x))

fn other(x: [b n D]) -> [b n D]:
    return x * 2.0
"""
P = "/tmp/shapescript-test/inc.ss"


def _results(ws):
    return dict(ws.analyze(P).fns)


def test_body_edit_rechecks_only_that_function():
    ws = Workspace()
    ws.set_text(P, SRC)
    before = _results(ws)
    ws.set_text(P, SRC.replace("x * 2.0", "x * 3.0"))
    after = _results(ws)
    assert after["mlp"] is before["mlp"] and after["twice"] is before["twice"]
    assert after["other"] is not before["other"]


def test_signature_edit_rechecks_callers():
    ws = Workspace()
    ws.set_text(P, SRC)
    before = _results(ws)
    ws.set_text(P, SRC.replace("fn mlp(p: Mlp, x: [b n D]) -> [b n D]:", "fn mlp(p: Mlp, x: [b n D]) -> [b n F]:"))
    after = _results(ws)
    assert after["twice"] is not before["twice"] and after["other"] is before["other"]
    assert {d.code for d in ws.diagnostics(P)} == {"E0409", "E0401"}


def test_model_edit_rechecks_readers():
    ws = Workspace()
    ws.set_text(P, SRC)
    before = _results(ws)
    ws.set_text(P, SRC.replace("w_down: [D F]", "w_down: [D D]"))
    after = _results(ws)
    assert after["mlp"] is not before["mlp"] and after["other"] is before["other"]
    assert [d.code for d in ws.diagnostics(P) if d.severity == 1] == ["E0403"]


def test_incremental_equals_fresh_after_many_edits():
    ws = Workspace()
    text = SRC
    ws.set_text(P, text)
    for old, new in [("relu", "gelu"), ("x * 2.0", "x * y"), ("dim F = 128", "dim F = 96"),
                     ("x * y", "x * 2.0"), ("w_up", "w_upx"), ("w_upx", "w_up")]:
        text = text.replace(old, new, 1)
        ws.set_text(P, text)
        fresh = Workspace()
        fresh.set_text(P, text)
        got = [(d.code, d.message, d.span.abs_start) for d in ws.diagnostics(P)]
        want = [(d.code, d.message, d.span.abs_start) for d in fresh.diagnostics(P)]
        assert sorted(got) == sorted(want)


def test_imports_and_their_changes(tmp_path):
    lib = tmp_path / "layers.ss"
    main = tmp_path / "main.ss"
    lib.write_text("dim D = 64\n\nfn ident(x: [b D]) -> [b D]:\n    return x\n")
    main.write_text('import "layers.ss"\n\nfn f(x: [b D]) -> [b D]:\n    return ident(x)\n')
    ws = Workspace()
    ws.set_text(str(main), main.read_text())
    assert ws.diagnostics(str(main)) == []
    ws.set_text(str(lib), "dim D = 64\n\nfn ident(x: [b D]) -> [b D b]:\n    return x\n")
    assert ws.importers(str(lib)) == [ws.norm(str(main))]
    assert [d.code for d in ws.diagnostics(str(main))] == ["E0409"]


def test_import_errors(tmp_path):
    a, b = tmp_path / "a.ss", tmp_path / "b.ss"
    a.write_text('import "b.ss"\ndim D = 1\n')
    b.write_text('import "a.ss"\ndim E = 1\n')
    ws = Workspace()
    ws.set_text(str(a), a.read_text())
    ds = ws.diagnostics(str(a))
    assert [(d.code, d.message) for d in ds] == [("E0209", "import cycle: a.ss → b.ss → a.ss")]
    ws.set_text(str(a), 'import "missing.ss"\n')
    assert [(d.code, d.message) for d in ws.diagnostics(str(a))] == [("E0210", "can't find `missing.ss`")]


def test_a_missing_import_is_the_one_diagnostic(tmp_path):
    main = tmp_path / "main.ss"
    main.write_text('import "layers.ss"\n\nmodel Net:\n    mlp: Mlp\n    out: [D D]\n\n'
                    'fn run(m: Net, x: [b n D]) -> [b n D]:\n    return mlp(m.mlp, x) |> linear(m.out)\n')
    ws = Workspace()
    ws.set_text(str(main), main.read_text())
    assert [d.code for d in ws.diagnostics(str(main)) if d.severity == 1] == ["E0210"]


def test_a_dim_in_error_is_the_one_diagnostic():
    src = """dim D = 768
dim H = 10
dim Dh = D / H

model M:
    w: [D Dh]

fn f(m: M, x: [b n D]) -> [b H n Dh]:
    _y = linear(x, m.w) * (1 / sqrt(Dh))
    return x |> rearrange(b n (H Dh) -> b H n Dh) |> softmax(over=Dh)
"""
    ws = Workspace()
    ws.set_text(P, src)
    assert [d.code for d in ws.diagnostics(P)] == ["E0208"]
