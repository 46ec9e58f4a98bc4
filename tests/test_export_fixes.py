"""The quick fixes of the export checks: each, applied to its case, gives the program a
person would have written, which checks with no E33xx and no new error."""
from __future__ import annotations

import textwrap

import pytest

from checkout import program, read_program, shapescript
from shapescript_core.diagnostics import Applicability, Severity
from shapescript_core.apply_fixes import apply_edits
from shapescript_core.workspace import Workspace

DIR = "/tmp/shapescript-export-fixes"
PATH = f"{DIR}/case.ss"


@pytest.fixture(autouse=True)
def _debug(monkeypatch):
    monkeypatch.setenv("SHAPESCRIPT_DEBUG", "1")


def _errors(files: dict, path: str) -> list:
    ws = Workspace()
    for p, text in files.items():
        ws.set_text(p, text)
    return [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR]


def apply_fix(src: str, code: str, title: str, extra: dict | None = None) -> dict:
    """The files after applying the fix `title` of the `code` diagnostic of src."""
    files = {p: textwrap.dedent(t) for p, t in (extra or {}).items()}
    files[PATH] = textwrap.dedent(src)
    ws = Workspace()
    for p, text in files.items():
        ws.set_text(p, text)
    diags = [d for d in ws.diagnostics(PATH) if d.code == code]
    assert diags, f"no {code}"
    fixes = [f for d in diags for f in d.fixes if f.title == title]
    assert fixes, [f.title for d in diags for f in d.fixes]
    fix = fixes[0]
    assert fix.applicability == Applicability.SAFE
    out = dict(files)
    for p in files:
        out[p] = apply_edits(files[p], [e for e in fix.edits if e.span.path == p])
    before = {(d.code, d.message) for p in files for d in _errors(files, p) if not d.code.startswith("E33")}
    for p in files:
        after = _errors(out, p)
        assert not [d for d in after if d.code.startswith("E33")], [(d.code, d.message) for d in after]
        assert {(d.code, d.message) for d in after} <= before, [(d.code, d.message) for d in after]
    return out


DIMS = """\
dim V  = 1000
dim D  = 64
dim H  = 4
dim Dh = D / H
"""

MODEL = """\
model Lm:
    emb: [V D]
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wo: [D D]
    W: [V D]
"""

QKV = """\
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(x, m.wk) |> rearrange(b n (H Dh) -> b H n Dh)
    v = linear(x, m.wv) |> rearrange(b n (H Dh) -> b H n Dh)
"""

SIG = "fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:\n"
TAIL = "    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(m.wo))\n    return linear(x, m.W)\n"


def lm(attention: str) -> str:
    return DIMS + "\n" + MODEL + "\n" + SIG + QKV + textwrap.indent(textwrap.dedent(attention), "    ") + TAIL


# ---------------------------------------------------------------- E3306
def test_e3306_reorders_the_signature_and_every_call():
    lib = f"{DIR}/lib.ss"
    src = """\
    dim D = 64
    dim C = 10

    model Classifier:
        w: [C D]

    @export(hf)
    fn classify(x: [b D], m: Classifier, t: f32 = 1.0) -> [b C]:
        return linear(x, m.w) * t

    fn twice(x: [b D], m: Classifier) -> [b C]:
        return classify(x, m) + classify(x, m=m, t=2.0)
    """
    user = """\
    import "case.ss"

    model Net:
        cls: Classifier

    fn run(n: Net, x: [b D]) -> [b C]:
        return classify(x, n.cls, 0.5) + (x |> classify(n.cls))
    """
    out = apply_fix(src, "E3306", "Make `m` the first parameter", extra={lib: user})
    assert out[PATH] == textwrap.dedent("""\
    dim D = 64
    dim C = 10

    model Classifier:
        w: [C D]

    @export(hf)
    fn classify(m: Classifier, x: [b D], t: f32 = 1.0) -> [b C]:
        return linear(x, m.w) * t

    fn twice(x: [b D], m: Classifier) -> [b C]:
        return classify(m, x) + classify(m, x, t=2.0)
    """)
    assert out[lib] == textwrap.dedent("""\
    import "case.ss"

    model Net:
        cls: Classifier

    fn run(n: Net, x: [b D]) -> [b C]:
        return classify(n.cls, x, 0.5) + (classify(n.cls, x))
    """)


# ---------------------------------------------------------------- E3301
def test_e3301_gives_a_parameter_a_default():
    src = DIMS + "\n" + MODEL + """
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64, t: f32, k: i32) -> [b n V]:
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n])
    return linear(x * t + (o |> rearrange(b H n Dh -> b n (H Dh))), m.W)
"""
    ws = Workspace()
    ws.set_text(PATH, src)
    (d,) = [d for d in ws.diagnostics(PATH) if d.code == "E3301"]
    assert [f.title for f in d.fixes] == ["Give `t` a default", "Give `k` a default"]
    text = apply_edits(src, [e for f in d.fixes for e in f.edits])
    assert text == src.replace("t: f32, k: i32)", "t: f32 = 0.0, k: i32 = 0)")
    assert _errors({PATH: text}, PATH) == []
    # one at a time, as `check --fix` does: the first, then the one the re-check offers
    out = apply_fix(src.replace(", k: i32", ""), "E3301", "Give `t` a default")
    assert "t: f32 = 0.0) -> [b n V]:" in out[PATH]


# ---------------------------------------------------------------- E3304: hand-written attention
def test_e3304_hand_written_attention_becomes_sdpa():
    src = lm("""\
        att = einsum(q, k: b H n Dh, b H m Dh -> b H n m)
            |> scale(1 / sqrt(Dh))
            |> masked_fill(!causal[n m], -inf)
            |> softmax(over=m)
        o = einsum(att, v: b H n m, b H m Dh -> b H n Dh)
    """)
    out = apply_fix(src, "E3304", "Use scaled_dot_product_attention with causal mask")
    assert out[PATH] == lm("o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])\n")


def test_e3304_hand_written_attention_keeps_a_non_default_scale():
    src = lm("""\
        s = einsum(q, k: b H n Dh, b H m Dh -> b H n m) * 0.125
        p = softmax(s, over=m)
        o = einsum(p, v: b H n m, b H m Dh -> b H n Dh)
    """)
    out = apply_fix(src, "E3304", "Use scaled_dot_product_attention with causal mask")
    assert out[PATH] == lm("o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=0.125)\n")


def test_e3304_hand_written_attention_divided_by_another_size():
    src = DIMS + "dim T = 8\n\n" + MODEL + "\n" + SIG + QKV + """\
    o = einsum(softmax(einsum(q, k: b H n Dh, b H m Dh -> b H n m) / sqrt(T), over=m), v: b H n m, b H m Dh -> b H n Dh)
""" + TAIL
    out = apply_fix(src, "E3304", "Use scaled_dot_product_attention with causal mask")
    assert "o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=1 / sqrt(T))\n" in out[PATH]


def test_e3304_hand_written_attention_in_a_helper_like_the_chapter():
    path = program("export", "seed_e3304.ss")
    src = open(path, encoding="utf-8").read()
    out = apply_fix(src, "E3304", "Use scaled_dot_product_attention with causal mask")
    assert """\
    v = linear(x, a.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
        |> rearrange(b H n Dh -> b n (H Dh))
        |> linear(a.wo)
""" in out[PATH]


# ---------------------------------------------------------------- E3304: the mask
@pytest.mark.parametrize("before,after", [
    ("o = scaled_dot_product_attention(q, k, v)\n",
     "o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])\n"),
    ("o = scaled_dot_product_attention(q, k, v, scale=0.5)\n",
     "o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=0.5)\n"),
    ("o = q |> scaled_dot_product_attention(k, v)\n",
     "o = q |> scaled_dot_product_attention(k, v, attn_mask=causal[n n])\n"),
    ("o = scaled_dot_product_attention(q, k, v, attn_mask=!causal[n n])\n",
     "o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])\n"),
    ("mask = causal[n n]\no = scaled_dot_product_attention(q, k, v, attn_mask=mask)\n",
     "o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])\n"),
])
def test_e3304_use_the_causal_mask(before, after):
    out = apply_fix(lm(before), "E3304", "Use the causal mask")
    assert out[PATH] == lm(after)


# ---------------------------------------------------------------- E3305
GQA = """\
dim V   = 1000
dim D   = 64
dim H   = 4
dim Hkv = 2
{g}dim Dh  = D / H

model Lm:
    emb: [V D]
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    W: [V D]

fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.emb)
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    k = linear(x, m.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos)
    v = linear(x, m.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
{r}    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(m.wo))
    return linear(x, m.W)
"""
REPEAT = "    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)\n    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)\n"


def test_e3305_repeats_keys_and_values_declaring_the_group_dim():
    out = apply_fix(GQA.format(g="", r=""), "E3305", "Repeat keys and values to H heads")
    assert out[PATH] == GQA.format(g="dim G   = H / Hkv\n", r=REPEAT)


def test_e3305_repeats_keys_and_values_with_the_group_dim_there():
    src = GQA.format(g="dim G   = H / Hkv\n", r="")
    out = apply_fix(src, "E3305", "Repeat keys and values to H heads")
    assert out[PATH] == GQA.format(g="dim G   = H / Hkv\n", r=REPEAT)


def test_e3305_repeat_in_a_helper():
    src = """\
    dim V   = 1000
    dim D   = 64
    dim H   = 4
    dim Hkv = 2
    dim Dh  = D / H

    model Lm:
        emb: [V D]
        wq: [H*Dh D]
        wk: [Hkv*Dh D]
        W: [V D]

    fn attend(q: [b H n Dh], k: [b Hkv n Dh], v: [b Hkv n Dh]) -> [b H n Dh]:
        return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])

    fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
        x = embedding(ids, m.emb)
        q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh)
        k = linear(x, m.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
        return linear(x + (attend(q, k, k) |> rearrange(b H n Dh -> b n (H Dh))), m.W)
    """
    out = apply_fix(src, "E3305", "Repeat keys and values to H heads")
    assert textwrap.dedent("""\
    dim Hkv = 2
    dim G   = H / Hkv
    dim Dh  = D / H
    """) in out[PATH]
    assert textwrap.dedent("""\
    fn attend(q: [b H n Dh], k: [b Hkv n Dh], v: [b Hkv n Dh]) -> [b H n Dh]:
        k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
        v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
        return scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    """) in out[PATH]


# ---------------------------------------------------------------- E3302
@pytest.mark.parametrize("before,after", [
    ("return x |> linear(m.W) |> to(f32)", "return x |> to(f32) |> linear(m.W)"),
    ("return to(linear(x, m.W), f32)", "return linear(to(x, f32), m.W)"),
])
def test_e3302_moves_a_trailing_cast_before_the_output_layer(before, after):
    head = DIMS + "\n" + MODEL + "\n" + SIG + QKV + "    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])\n"
    out = apply_fix(head + "    " + before + "\n", "E3302", "Cast before the output layer")
    assert out[PATH] == head + "    " + after + "\n"


def test_e3302_a_bias_gets_no_fix():
    path = program("export", "seed_e3302.ss")
    ws = Workspace()
    ws.set_text(path, open(path, encoding="utf-8").read())
    (d,) = [d for d in ws.diagnostics(path) if d.code == "E3302"]
    assert d.fixes == []


# ---------------------------------------------------------------- the command line
def test_cli_fix_applies_them(tmp_path):
    cases = {
        "seed_e3304.ss": "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])",
        "e3304_no_mask.ss": "attn_mask=causal[n n]",
        "e3305_kv_heads.ss": "repeat(b Hkv n Dh -> b (Hkv G) n Dh)",
        "e3301_extra_param.ss": "t: f32 = 0.0",
        "seed_e3306.ss": "fn classify(m: Classifier, x: [b D])",
    }
    for name, expect in cases.items():
        src = read_program("export", name)
        p = tmp_path / name
        p.write_text(src, encoding="utf-8")
        r = shapescript("check", "--fix", p)
        assert r.returncode == 0, r.stdout + r.stderr
        assert expect in p.read_text(encoding="utf-8"), name
