"""The reference evaluator's public API (docs/evaluate.md): sources in, tensors out,
values checked against torch written by hand."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from shapescript_core.evaluate import EvaluateError, evaluate, load  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = '''
dim D = 8
dim H = 2
dim Dh = D / H

model M:
    w: [D D]
    g: [D] = ones

fn halves(x: [b D]) -> [b Dh]:
    a, c = x |> split(b (2 Dh) -> b Dh)
    return a - c

fn forward(m: M, x: [b n D], s: [] = 0.5) -> [b n D]:
    h = rms_norm(x, m.g, over=D, eps=s * 2)
    y: [b n D] = linear(h, m.w)
    return softmax(y, over=n) * mean(y, over=D)
'''


def test_run_computes_what_the_source_says():
    prog = load(SRC)
    w = prog.random_weights("forward", seed=3, std=1.0)
    assert set(w) == {"w", "g"} and w["w"].shape == (8, 8)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    for s in (0.5, 0.1):
        got = prog.run("forward", w, x=x, s=s) if s != 0.5 else prog.run("forward", w, x=x)
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 2 * s) * w["g"]
        y = h @ w["w"].T
        want = y.softmax(1) * y.mean(-1, keepdim=True)
        assert (got - want).abs().max().item() < 1e-5


def test_patterns_and_tuples():
    x = torch.arange(12.0).reshape(3, 4) + torch.zeros(3, 2, 4).sum(1)  # [3, 4]
    src = SRC.replace("dim D = 8", "dim D = 4")
    got = load(src).run("halves", x=x)
    assert torch.equal(got, x[:, :2] - x[:, 2:])


def test_random_weights_follow_the_initializers_and_the_seed():
    prog = load(SRC)
    a, b = prog.random_weights("forward", seed=1), prog.random_weights("forward", seed=1)
    assert torch.equal(a["w"], b["w"]) and torch.equal(a["g"], torch.ones(8))
    assert a["w"].std().item() < 0.05  # normal(0.02), the default
    assert not torch.equal(a["w"], prog.random_weights("forward", seed=2)["w"])


def test_a_file_with_dims_overridden():
    prog = load(path=os.path.join(HERE, "programs", "scalars", "issue20.ss"), dims={"L": 1})
    assert [p for p, *_ in prog.params("Lm")].count("layers.0.w_up") == 1
    assert not any(p.startswith("layers.1.") for p, *_ in prog.params("Lm"))
    ids = torch.randint(0, 64, (1, 4))
    out = evaluate(None, "forward", path=os.path.join(HERE, "programs", "scalars", "issue20.ss"), dims={"L": 1},
                   ids=ids, pos=torch.arange(4)[None])
    assert out.shape == (1, 4, 64) and torch.isfinite(out).all()


def test_bad_input_is_one_clear_error():
    with pytest.raises(EvaluateError, match=r"does not check:\nerror\[E0402\]"):
        load("dim D = 4\nfn f(x: [b D], y: [n]) -> [b D]:\n    return x + y\n")
    with pytest.raises(EvaluateError, match="needs its parameter `x`"):
        load(SRC).run("forward", load(SRC).random_weights("forward"))
    with pytest.raises(EvaluateError, match="no function `nope`"):
        load(SRC).run("nope")
    with pytest.raises(EvaluateError, match="the source text or a path"):
        load()
