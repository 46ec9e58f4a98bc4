"""The export checks E3301-E3306 (SERVING-ENGINES.md), on programs written for the rules.

A case is a source string; a line ending in `# error: E3304` expects that code's error
there, and `# error: E3304 "…"` also its exact headline. A case passes when the errors
reported (every code, not only E33xx) are exactly those.
"""
from __future__ import annotations

import os
import re
import textwrap

import pytest

from checkout import program as program_path
from checkout import read_program, shapescript
from shapescript_core.diagnostics import Severity
from shapescript_core.workspace import Workspace

EXPECT = re.compile(r'#\s*error:\s*(E\d{4})(?:\s+"(.*)")?\s*$')
PATH = "/tmp/shapescript-export-test/case.ss"


@pytest.fixture(autouse=True)
def _debug(monkeypatch):
    # an internal exception of the export checks fails the test instead of hiding
    monkeypatch.setenv("SHAPESCRIPT_DEBUG", "1")


def diagnostics(src: str, requests=None, default_targets=None, path: str = PATH, extra: dict | None = None):
    ws = Workspace()
    for p, text in (extra or {}).items():
        ws.set_text(p, textwrap.dedent(text))
    ws.set_text(path, textwrap.dedent(src))
    if requests is not None:
        ws.set_export_requests({path: requests})
    if default_targets is not None:
        ws.set_default_targets(default_targets)
    return ws, [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR]


def expected(src: str):
    out = []
    for k, line in enumerate(textwrap.dedent(src).split("\n"), start=1):
        m = EXPECT.search(line)
        if m:
            out.append((m.group(1), k, m.group(2)))
    return out


def line_of(src: str, text: str) -> int:
    """The 1-based line of the first line of src holding text."""
    return next(k for k, line in enumerate(textwrap.dedent(src).split("\n"), start=1) if text in line)


def assert_case(src: str, **kw):
    ws, diags = diagnostics(src, **kw)
    f = ws.file(kw.get("path", PATH))
    got = sorted((d.code, f.lines.line_of(d.span.abs_start) + 1) for d in diags)
    want = expected(src)
    assert got == sorted((c, l) for c, l, _ in want), [(d.code, d.message) for d in diags]
    for code, line, headline in want:
        if headline is not None:
            msgs = [d.message for d in diags if d.code == code and f.lines.line_of(d.span.abs_start) + 1 == line]
            assert headline in msgs, msgs
    return diags


# ---------------------------------------------------------------- building blocks
DIMS = """\
dim V  = 1000
dim D  = 64
dim H  = 4
dim Dh = D / H
dim L  = 2
"""

ATTN = """\
model Attn:
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wo: [D D]

fn attend(a: Attn, x: [b n D]) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, a.wk) |> rearrange(b n (H Dh) -> b H n Dh)
    v = linear(x, a.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)
"""

LM = """\
model Lm:
    emb: [V D]
    attn: Attn
    W: [V D]
"""


# a model holding its own attention weights, and the start of its forward
QKV_FORWARD = """
model Lm:
    emb: [V D]
    wq: [D D]
    wk: [D D]
    wv: [D D]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
"""


def program(body: str, sig: str = "fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:", extra: str = "") -> str:
    return DIMS + "\n" + ATTN + "\n" + LM + "\n" + extra + "\n" + sig + "\n" + \
        textwrap.indent(textwrap.dedent(body), "    ")


# ---------------------------------------------------------------- clean programs
def test_clean_tied_model_with_other_axis_names():
    src = DIMS + "\n" + ATTN + """
model Tied:
    tok: [V D]
    attn: Attn
    norm: [D] = ones

@export(hf, vllm)
fn forward(m: Tied, tokens: [s t] Index[V], where: [s t] i32) -> [s t V]:
    x = embedding(tokens, m.tok)
    x = x + attend(m.attn, rms_norm(x, m.norm, over=D))
    return rms_norm(x, m.norm, over=D) |> linear(m.tok)
"""
    assert assert_case(src) == []


def test_clean_llama_and_gpt2_from_the_conformance_cases():
    for name in ("llama.ss", "gpt2.ss", "classifier.ss"):
        path = program_path("ok", name)
        ws = Workspace()
        ws.set_text(path, open(path, encoding="utf-8").read())
        assert [d.code for d in ws.diagnostics(path) if d.severity == Severity.ERROR] == [], name


# ---------------------------------------------------------------- E3304
def test_e3304_through_two_helpers_with_renamed_axes():
    src = program("""\
        x = embedding(ids, m.emb) |> outer
        x = x + attend(m.attn, x)
        return linear(x, m.W)
    """, extra="""\
fn inner(y: [p q D]) -> [p q D]:
    return y - mean(y, over=q)  # error: E3304 "a serving engine can't run this: this works along `n`, which mixes its positions"

fn outer(x: [s t D]) -> [s t D]:
    return inner(x) * 2.0
""")
    (d,) = assert_case(src)
    assert d.primary_label == f"`q` is `n`, passed to `inner` at line {line_of(src, 'return inner(x)')}"
    assert d.helps == ["Write attention as scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]), "
                       "and take positions as a parameter."]


def test_e3304_through_a_stack_reported_once():
    src = DIMS + "\n" + ATTN + """
model Block:
    attn: Attn

model Lm:
    emb: [V D]
    layers: [L] Block
    W: [V D]

fn block(blk: Block, x: [b n D]) -> [b n D]:
    x = x + attend(blk.attn, x)
    return x - sum(x, over=n)  # error: E3304 "a serving engine can't run this: this works along `t`, which mixes its positions"

fn forward(m: Lm, ids: [s t] Index[V]) -> [s t V]:
    x = embedding(ids, m.emb)
    for layer in m.layers:
        x = block(layer, x)
    return linear(x, m.W)
"""
    assert_case(src)


def test_e3304_through_an_einsum_rename():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x)
        y = einsum(x, x: b k D, b k E -> b D E)  # error: E3304 "a serving engine can't run this: this works along `n`, which mixes its positions"
        return linear(x, m.W)
    """)
    (d,) = assert_case(src)
    assert d.primary_label == f"`k` is `n`, renamed at line {line_of(src, 'y = einsum')}"


def test_e3304_renamed_then_reduced_names_the_signature_axis():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x)
        y = rearrange(x, b z D -> b z D)
        z2 = softmax(y, over=z)  # error: E3304 "a serving engine can't run this: this works along `n`, which mixes its positions"
        return linear(x, m.W)
    """)
    (d,) = assert_case(src)
    assert d.primary_label == f"`z` is `n`, renamed at line {line_of(src, 'y = rearrange')}"


def test_e3304_along_the_batch_axis():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x)
        x = x - mean(x, over=b)  # error: E3304 "a serving engine can't run this: this works along `b`, which mixes its positions"
        return linear(x, m.W)
    """)
    assert_case(src)


def test_e3304_attention_whose_mask_is_a_bound_name():
    src = DIMS + """
model Lm:
    emb: [V D]
    wq: [D D]
    wk: [D D]
    wv: [D D]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    mask = causal[n n]
    o = scaled_dot_product_attention(q, k, v, attn_mask=mask)  # error: E3304
    return linear(x + (o |> rearrange(b H n Dh -> b n (H Dh))), m.W)
"""
    (d,) = assert_case(src)
    assert d.primary_label == "the mask must be written in the call, as `causal[n n]`"
    assert [f.title for f in d.fixes] == ["Use the causal mask"]


@pytest.mark.parametrize("line,label", [
    ("_y = sum(x, over=n)", "`sum` over `n`"),
    ("_y = max(x)", "`max` over every axis"),
    ("_y = logsumexp(x, over=(n, D))", "`logsumexp` over `n`"),
    ("_y = argmax(x, over=n)", "`argmax` over `n`"),
    ("_y = log_softmax(x, over=n)", "`log_softmax` over `n`"),
    ("_y = rearrange(x, b n D -> b D n) @ x", "contracts `n`"),
    ("_y = matmul(rearrange(x, b n D -> b D n), x)", "contracts `n`"),
    ("_y = einsum(x, x: b n D, b n E -> b D E)", "`n` is a token axis"),
    ("_y = concat(x, x, over=n)", "concatenates along `n`"),
    ("_y = arange(n)", "positions computed from `n`"),
    ("_y = x * n", "the size of `n` used as a value"),
    ("_y = rearrange(x, b n D -> b (n D))", "groups `n` with `D`"),
    ("_y = rearrange(x, b n (H Dh) -> b (H n) Dh)", "groups `n` with `H`"),
    ("_y = rearrange(x, b (n1 2) D -> b n1 2 D)", "splits `n` into (n1 2)"),
])
def test_e3304_each_kind_of_operation(line, label):
    src = DIMS + QKV_FORWARD + """    x = x + (scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh)))
    LINE  # error: E3304
    return linear(x, m.W)
""".replace("LINE", line)
    (d,) = assert_case(src)
    if label != "`n` is a token axis":
        assert d.primary_label == label
    else:
        assert d.primary_label == "sums over `n`"


def test_e3304_group_of_the_two_token_axes_is_fine():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x)
        y = rearrange(x, b n D -> (b n) D)
        x = rearrange(y, (b n) D -> b n D)
        return linear(x, m.W)
    """)
    assert assert_case(src) == []


def test_e3304_contractions_over_a_token_axis_in_a_helper():
    # the helper's t is ids' n, so a weight over t contracts the packed axis
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x)
        x = x + mixer(x)
        return linear(x, m.W)
    """, extra="""\
fn mixer(x: [s t D]) -> [s t D]:
    w = einsum(x, x: s t D, s u D -> s t u)
    return einsum(w, x: s t u, s u D -> s t D)  # error: E3304
""")
    (d,) = assert_case(src)
    assert d.primary_label == f"`u` is `n`, renamed at line {line_of(src, 'w = einsum')}"


def test_e3304_one_diagnostic_per_chain_for_hand_written_attention():
    src = DIMS + QKV_FORWARD + """    att = einsum(q, k: b H n Dh, b H m Dh -> b H n m)
        |> scale(1 / sqrt(Dh))
        |> masked_fill(!causal[n m], -inf)
        |> softmax(over=m)  # error: E3304
    o = einsum(att, v: b H n m, b H m Dh -> b H n Dh)
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)))
    x = x - mean(x, over=n)
    return linear(x, m.W)
"""
    # the second einsum and the later mean work on values derived from the softmax;
    # and "has no attention" (E3305) is not reported when E3304 is
    assert_case(src)


def test_e3304_in_an_imported_helper_is_reported_at_the_call():
    lib = "/tmp/shapescript-export-test/lib.ss"
    src = """\
import "lib.ss"

model Lm:
    emb: [V D]
    attn: Attn
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    x = x + attend(m.attn, x)
    x = center(x)  # error: E3304
    return linear(x, m.W)
"""
    libsrc = DIMS + "\n" + ATTN + """
fn center(x: [s t D]) -> [s t D]:
    return x - mean(x, over=t)
"""
    (d,) = assert_case(src, extra={lib: libsrc})
    assert d.path == PATH
    assert [(lab.span.path, lab.message) for lab in d.labels] == [(lib, "`t` is `n`, passed to `center` at line 11")]


# ---------------------------------------------------------------- E3305
def test_e3305_no_attention():
    src = DIMS + """
model Lm:
    emb: [V D]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:  # error: E3305 "`forward` has no attention"
    return linear(embedding(ids, m.emb), m.W)
"""
    (d,) = assert_case(src)
    assert d.helps == ["Repeat keys and values with fewer heads to H before attention."]


def test_e3305_two_attentions_of_different_shapes():
    src = DIMS + """
dim H2  = 8
dim Dh2 = D / H2

model Lm:
    emb: [V D]
    wq: [D D]
    wk: [D D]
    wv: [D D]
    W: [V D]

fn attn4(m: Lm, x: [b n D]) -> [b n D]:
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh))

fn attn8(m: Lm, x: [b n D]) -> [b n D]:
    q = linear(x, m.wq) |> rearrange(b n (H2 Dh2) -> b H2 n Dh2)
    k = linear(x, m.wk) |> rearrange(b n (H2 Dh2) -> b H2 n Dh2)
    v = linear(x, m.wv) |> rearrange(b n (H2 Dh2) -> b H2 n Dh2)
    return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H2 n Dh2 -> b n (H2 Dh2))  # error: E3305 "this attention's queries are [b H2 n Dh2], but the first attention's are [b H n Dh]"

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    x = x + attn4(m, x)
    x = x + attn8(m, x)
    return linear(x, m.W)
"""
    (d,) = assert_case(src)
    assert [lab.message for lab in d.labels] == ["the first attention: queries [b H n Dh]"]


def test_e3305_keys_and_values_with_fewer_heads():
    src = DIMS + """
dim Hkv = 2

model Lm:
    emb: [V D]
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, m.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    v = linear(x, m.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])  # error: E3305 "this attention's keys and values are [b Hkv n Dh], but its queries are [b H n Dh]"
    return linear(x + (o |> rearrange(b H n Dh -> b n (H Dh))), m.W)
"""
    (d,) = assert_case(src)
    assert [f.title for f in d.fixes] == ["Repeat keys and values to H heads"]


def test_e3305_attention_without_heads():
    src = DIMS + """
model Lm:
    emb: [V D]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    q = rearrange(x, b n D -> b 1 n D)
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n])  # error: E3305 "this attention's queries are [b 1 n D], but a serving engine's attention takes [b H n Dh]"
    return linear(x + rearrange(o, b 1 n D -> b n D), m.W)
"""
    assert_case(src)


def test_e3305_heads_of_a_generic_helper_are_judged_per_call():
    src = program("""\
        x = embedding(ids, m.emb)
        q = rearrange(x, b n (H Dh) -> b H n Dh)
        o = heads(q, q, q)
        return linear(x + rearrange(o, b H n Dh -> b n (H Dh)), m.W)
    """, extra="""\
fn heads(q: [b h n d], k: [b h n d], v: [b h n d]) -> [b h n d]:
    return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
""")
    assert assert_case(src) == []


# ---------------------------------------------------------------- E3301 / E3306
@pytest.mark.parametrize("sig,line", [
    ("fn forward(m: Lm, ids: [b n C] Index[V]) -> [b n C V]:  # error: E3301",
     "return linear(embedding(ids, m.emb), m.W)"),
    ("fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64, t: f32) -> [b n V]:  # error: E3301", None),
    ("fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] f32) -> [b n V]:  # error: E3301", None),
    ("fn forward(m: Lm, ids: [b n] Index[V]) -> [b n D]:  # error: E3301", "return embedding(ids, m.emb)"),
    ("fn forward(m: Lm, ids: [b n] Index[k]) -> [b n k]:  # error: E3301", "return one_hot(ids)"),
    ("fn forward(m: Lm, ids: [b n] Index[V], temperature: f32 = 1.0) -> [b n V]:", None),
    ("fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] Index[V]) -> [b n V]:", None),
])
def test_e3301_signature(sig, line):
    body = f"    {line}\n" if line else """\
    x = embedding(ids, m.emb)
    x = x + attend(m.attn, x)
    return linear(x, m.W)
"""
    src = DIMS + "dim C = 2\n\n" + ATTN + "\n" + LM + "\n@export(vllm)\n" + sig + "\n" + body
    diags = assert_case(src)
    for d in diags:
        assert d.message == "`forward` isn't a language model's forward function a serving engine can run"


def test_e3301_once_with_a_label_on_every_other_part():
    src = DIMS + "dim C = 2\n\n" + ATTN + "\n" + LM + """
@export(gguf)
fn forward(m: Lm, ids: [b n C] Index[V], t: f32) -> [b n C V]:  # error: E3301
    return linear(embedding(ids, m.emb), m.W)
"""
    (d,) = assert_case(src)
    assert d.primary_label.startswith("the token ids must be [b n] Index[V]")
    assert [lab.message for lab in d.labels] == ["`t` needs a default", "the logits must be [b n V]"]
    assert [f.title for f in d.fixes] == ["Give `t` a default"]


def test_e3306_not_also_e3301():
    src = DIMS + "\n" + ATTN + "\n" + LM + """
@export(vllm)
fn forward(ids: [b n] Index[V], m: Lm) -> [b n V]:  # error: E3306 "`forward` must take the model first, to be exported as one"
    return linear(embedding(ids, m.emb), m.W)
"""
    (d,) = assert_case(src)
    assert d.helps == ["Make the model the first parameter."]


def test_hf_target_checks_only_the_model_first():
    src = DIMS + "\n" + ATTN + "\n" + LM + """
@export(hf)
fn forward(m: Lm, ids: [b n] Index[V], t: f32) -> [b n D]:
    return embedding(ids, m.emb) |> softmax(over=n)
"""
    assert assert_case(src) == []


# ---------------------------------------------------------------- E3302 / E3303
@pytest.mark.parametrize("ret,label", [
    ("return linear(x, m.W, m.bias)  # error: E3302", "the output layer has a bias"),
    ("return linear(x, m.W) |> softmax(over=V)  # error: E3302", "`softmax` comes after the output layer"),
    ("return linear(x, m.head.W)  # error: E3302", "`m.head.W` isn't a param field of `m`"),
    ("return x @ m.WT  # error: E3302", "this isn't the output layer, `linear(h, m.W)`"),
    ("return linear(x, m.W) + mean(m.emb)  # error: E3302", "`+` comes after the output layer"),
])
def test_e3302_output_layer(ret, label):
    src = DIMS + "\n" + ATTN + """
model Head:
    W: [V D]

model Lm:
    emb: [V D]
    attn: Attn
    W: [V D]
    WT: [D V]
    bias: [V] = zeros
    head: Head

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    x = x + attend(m.attn, x)
    """ + ret + "\n"
    (d,) = assert_case(src)
    assert d.message == "a serving engine needs the logits to come from an output layer it can run"
    assert label in [d.primary_label] + [lab.message for lab in d.labels]
    assert d.helps == ["Return the output layer's result directly, and do anything else before it."]


def test_e3303_stray_reads_across_the_call_graph():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x) + peek(m, x)
        return linear(x, m.W)
    """, extra="""\
fn peek(lm: Lm, x: [b n D]) -> [b n D]:
    return x * mean(lm.emb) + x * mean(lm.W)
""")
    ws, diags = diagnostics(src)
    line = line_of(src, "x * mean(lm.emb)")
    assert [(d.code, ws.file(PATH).lines.line_of(d.span.abs_start) + 1) for d in diags] == [("E3303", line)] * 2
    assert sorted(d.message for d in diags) == [
        "`W` is the output layer, which a serving engine holds itself",
        "`emb` is the embedding table, which a serving engine holds itself"]


@pytest.mark.parametrize("first", [
    "x = embedding(ids, m.emb) + embedding(ids, m.W)  # error: E3303",
    "x = one_hot(ids) |> linear(rearrange(m.emb, V D -> D V))  # error: E3303",
    "x = embedding(ids, m.other)  # error: E3303",
])
def test_e3303_token_ids(first):
    src = DIMS + "\n" + ATTN + """
model Lm:
    emb: [V D]
    other: [V D]
    attn: Attn
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    """ + first + """
    x = x + attend(m.attn, x) + mean(m.other)
    return linear(x, m.W)
"""
    if "m.other)" in first:
        # the table is `other`: reading it elsewhere is the stray read
        src = src.replace("  # error: E3303", "").replace("mean(m.other)", "mean(m.other)  # error: E3303")
    assert_case(src)


# ---------------------------------------------------------------- which functions, which targets
def test_unmarked_forward_without_ids_is_hf_only():
    src = DIMS + """
model Net:
    w: [D D]

fn forward(m: Net, x: [b D]) -> [b D]:
    return linear(x, m.w)
"""
    assert assert_case(src) == []


def test_explicit_request_for_a_function_and_target():
    src = DIMS + """
dim C = 10

model Classifier:
    w: [C D]

@export(hf)
fn classify(m: Classifier, x: [b D]) -> [b C]:  # error: E3301
    return linear(x, m.w)
"""
    assert_case(src, requests=[("classify", {"vllm"})])
    assert_case(src, requests=[(None, {"gguf"})])
    assert diagnostics(src, requests=[("classify", {"hf"})])[1] == []


def test_default_targets_from_settings():
    src = DIMS + "\n" + ATTN + "\n" + LM + """
fn forward(m: Lm, ids: [b n] Index[V], t: f32) -> [b n V]:
    return linear(embedding(ids, m.emb), m.W)
"""
    assert [d.code for d in diagnostics(src)[1]] == ["E3301"]
    assert diagnostics(src, default_targets={"hf"})[1] == []


def test_functions_with_language_errors_are_not_checked():
    src = program("""\
        x = embedding(ids, m.emb)
        x = x + attend(m.attn, x) + helper(x)
        return linear(x, m.W) |> softmax(over=V)
    """, extra="""\
fn helper(x: [b n D]) -> [b n D]:
    return x + undefined_name  # error: E0201
""")
    assert_case(src)


def test_the_checks_never_raise_and_a_bug_is_shown(monkeypatch):
    from shapescript_core.serving import entry
    monkeypatch.delenv("SHAPESCRIPT_DEBUG")

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(entry, "check_exported", boom)
    src = DIMS + "\n" + ATTN + "\n" + LM + "\nfn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:\n" \
        "    return linear(embedding(ids, m.emb), m.W)\n"
    # never a clean file: one E0001 at the function whose export checks failed
    assert [(d.code, d.span.anchor.name) for d in diagnostics(src)[1]] == [("E0001", "forward")]


# ---------------------------------------------------------------- the command line
def _write(tmp_path, name, src):
    p = tmp_path / name
    p.write_text(src, encoding="utf-8")
    return p


def test_cli_check_target_and_fn(tmp_path):
    p = _write(tmp_path, "c.ss", read_program("ok", "classifier.ss"))
    ok = shapescript("check", p)
    assert ok.returncode == 0, ok.stdout
    bad = shapescript("check", "--format", "json", "--target", "vllm", "--fn", "classify", p)
    assert bad.returncode == 1 and '"code": "E3301"' in bad.stdout


def test_cli_export_refuses_before_writing(tmp_path):
    src = read_program("export", "e3305_kv_heads.ss")
    p = _write(tmp_path, "m.ss", src)
    before = sorted(os.listdir(tmp_path))
    r = shapescript("export", p, "--vllm", "--out", tmp_path / "out", "--random-weights", cwd=tmp_path)
    assert r.returncode == 1
    assert "error[E3305]" in r.stdout + r.stderr
    assert sorted(os.listdir(tmp_path)) == before


def test_a_model_that_did_not_parse_leaves_the_export_checks_out():
    # the helper's parameter is a model whose text did not parse (its fields unknown): its
    # syntax error is the file's one diagnostic for it, never an E0001 of the export checks
    src = DIMS + ATTN + """
model Mlp:
dim F = 128
    w_up: [F D]
    w_down: [D F]

model Block:
    attn: Attn
    mlp: Mlp

model Lm:
    emb: [V D]
    layers: [L] Block
    W: [V D]

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return linear(relu(linear(x, p.w_up)), p.w_down)

@export(hf, gguf)
fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.emb)
    for blk in m.layers:
        x = x + attend(blk.attn, x)
        x = x + mlp(blk.mlp, x)
    return linear(x, m.W)
"""
    ws, diags = diagnostics(src)
    f = ws.file(PATH)
    got = [(d.code, f.lines.line_of(d.span.abs_start) + 1, d.message) for d in diags]
    model_line = line_of(src, "model Mlp:")
    assert got == [("E0101", model_line, "expected an indented block, found the end of the item"),
                   ("E0101", model_line + 2, "expected the end of the item, found an indented block")], got
