"""Each builtin's shape rule: one passing and one failing use (LANGUAGE.md §6)."""
import pytest

from shapescript_core.check.builtins import BUILTINS

from support import errors

PRELUDE = """dim V = 100
dim D = 64
dim F = 32
dim H = 4
dim Dh = D / H

model M:
    w: [F D]
    b: [F] = zeros
    e: [V D]
    g: [D] = ones
    wt: [D F]

"""
PARAMS = ("m: M, x: [b n D], y: [b n F], z: [b n], ids: [b n] Index[V], pos: [b n] i64, "
          "q: [b H n Dh], k: [b H n Dh], v: [b H n Dh], s: [b H n n]")

UNARY = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",
         "abs", "neg", "square", "sin", "cos"]

# (builtin, passing expression, its type, failing expression, the code it raises)
CASES = [(u, f"{u}(x)", "[b n D]", f"{u}(ids)", "E0303") for u in UNARY] + [
    ("maximum", "maximum(x, m.g)", "[b n D]", "maximum(z, m.g)", "E0402"),
    ("minimum", "minimum(z, x)", "[b n D]", "minimum(y, x)", "E0402"),
    ("where", "where(x > 0.0, x, m.g)", "[b n D]", "where(x, x, m.g)", "E0304"),
    ("sum", "sum(x, over=D)", "[b n]", "sum(x, over=F)", "E0404"),
    ("mean", "mean(x, over=(n, D))", "[b]", "mean(x, over=m)", "E0404"),
    ("max", "max(x)", "[]", "max(x, over=F)", "E0404"),
    ("min", "min(x, over=b)", "[n D]", "min(m.e, over=n)", "E0404"),
    ("logsumexp", "logsumexp(x, over=D)", "[b n]", "logsumexp(ids, over=n)", "E0303"),
    ("argmax", "argmax(x, over=D)", "[b n] Index[D]", "argmax(x)", "E0206"),
    ("softmax", "softmax(x, over=D)", "[b n D]", "softmax(x, over=F)", "E0404"),
    ("log_softmax", "log_softmax(y, over=F)", "[b n F]", "log_softmax(y, over=D)", "E0404"),
    ("rms_norm", "rms_norm(x, m.g, over=D, eps=1e-5)", "[b n D]", "rms_norm(x, m.b, over=D)", "E0401"),
    ("layer_norm", "layer_norm(x, m.g, m.g, over=D)", "[b n D]", "layer_norm(x, m.g, m.b, over=D)", "E0401"),
    ("linear", "linear(x, m.w, m.b)", "[b n F]", "linear(y, m.w)", "E0403"),
    ("matmul", "matmul(x, m.wt)", "[b n F]", "matmul(x, m.w)", "E0403"),
    ("embedding", "embedding(ids, m.e)", "[b n D]", "embedding(x, m.e)", "E0304"),
    ("one_hot", "one_hot(ids)", "[b n V]", "one_hot(pos)", "E0304"),
    ("rope", "rope(q, pos, theta=500000.0)", "[b H n Dh]", "rope(q, x)", "E0304"),
    ("scaled_dot_product_attention", "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])",
     "[b H n Dh]", "scaled_dot_product_attention(q, k, v, attn_mask=causal[n D])", "E0412"),
    # v0.3: topk's tuple destructured first (the failing statement is the first line)
    ("topk", "a, i = topk(x, k=F, over=D)\nsum(a, over=F) + sum(to(i, f32), over=F)", "[b n]",
     "a, i = topk(x, k=V, over=D)\nsum(a, over=F)", "E0304"),
    ("take", "take(m.e, ids, over=V)", "[b n D]", "take(m.e, pos, over=V)", "E0304"),
    ("masked_fill", "masked_fill(s, !causal[n n], -inf)", "[b H n n]", "masked_fill(s, causal[n D], 0.0)", "E0412"),
    ("scale", "scale(x, 1 / sqrt(Dh))", "[b n D]", "scale(x, y)", "E0402"),
    ("softcap", "softcap(x, 30.0)", "[b n D]", "softcap(x, x)", "E0304"),
    ("to", "to(x, bf16)", "[b n D] bf16", "to(x, 3)", "E0304"),
    ("concat", "concat(x, x, over=D)", "[b n 2*D]", "concat(x, y, over=D)", "E0401"),
    ("arange", "arange(n)", "[n] i64", "arange(x)", "E0304"),
    ("rearrange", "rearrange(x, b n (H Dh) -> b H n Dh)", "[b H n Dh]", "rearrange(x, b n D -> b n)", "E0405"),
    ("split", "sum(q, over=Dh)", "[b H n]", "q", "E0409"),  # split: see test_patterns
    ("repeat", "repeat(z, b n -> b n H)", "[b n H]", "repeat(z, b n -> b n t)", "E0405"),
    ("einsum", "einsum(q, k: b H n Dh, b H t Dh -> b H n t)", "[b H n n]",
     "einsum(q, y: b H n Dh, b F -> b H n Dh)", "E0407"),
]


def _fn(expr: str, ret: str) -> str:
    """f returning expr; lines before expr's last are statements (a tuple destructured)."""
    *stmts, last = expr.split("\n")
    body = "".join(f"    {x}\n" for x in stmts)
    return PRELUDE + f"fn f({PARAMS}) -> {ret}:\n{body}    return {last}\n"


def test_every_builtin_has_a_case():
    assert {c[0] for c in CASES} == set(BUILTINS)


@pytest.mark.parametrize("name,good,ret,bad,code", CASES, ids=[c[0] for c in CASES])
def test_builtin_shape_rule(name, good, ret, bad, code):
    assert errors(_fn(good, ret)) == [], f"{good} should be {ret}"
    line = PRELUDE.count("\n") + 2
    assert errors(_fn(bad, ret)) == [(code, line)], f"{bad} should raise {code}"


@pytest.mark.parametrize("src,code", [
    ("linear(x, m.w, m.b, m.b)", "E0206"),
    ("softmax(x, over=D, along=D)", "E0206"),
    ("softmx(x, over=D)", "E0205"),
    ("linear(x, m)", "E0301"),
])
def test_calls(src, code):
    assert [c for c, _ in errors(_fn(src, "[b n F]"))] == [code]


def test_builtin_table_drives_docs_and_signatures():
    b = BUILTINS["linear"]
    assert b.signature == "linear(x, W, b=None)"
    assert "PyTorch" in b.doc and b.torch
    assert BUILTINS["softmax"].signature == "softmax(x, over=A)"
