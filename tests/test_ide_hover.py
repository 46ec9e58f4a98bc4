"""Hover in the core: plain offsets in, Markdown out."""
from __future__ import annotations

import pytest

from ide_support import workspace
from shapescript_core.ide.hover import code_summary, hover
from shapescript_core.diagnostics import doc_url

LIB = """\
    # Shared sizes.
    dim D  = 64
    dim H  = 4
    dim Dh = D / H

    # Attention weights.
    model Attn:
        wq: [D D]
        layers: [2] Attn
    """

HEAD = """\
    import "lib.ss"

    fn attend(a: Attn, x: [b n D]) -> [b n D]:
        q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh)
        att = einsum(q, q: b H n Dh, b H m Dh -> b H n m) |> softmax(over=m)
        o = einsum(att, q: b H n m, b H m Dh -> b H n Dh)
        return o |> rearrange(b H n Dh -> b n (H Dh))
    """

CASES = [
    ("a$tt = einsum", ["att: [b H n m] f32"]),  # a binding
    ("einsum(a$tt, q", ["att: [b H n m] f32"]),  # a use
    ("fn attend(a: Attn, x$: [b n D])", ["x: [b n D] f32"]),  # a parameter
    ("|> soft$max(over=m)", ["softmax(x, over=A)", "shape kept", "here: `[b H n m] f32`"]),  # a builtin
    ("b n (H D$h) -> b H n Dh)", ["dim Dh = D / H", "`Dh = 16`", "from `lib.ss`"]),  # a dim in a pattern
    ("fn attend(a: At$tn", ["model Attn:", "wq: [D D] f32", "layers: [2] Attn", "Attention weights."]),
    ("a.w$q)", ["Attn.wq: [D D] f32"]),  # a field read
    ("x, a.wq) $|> rearrange", ["[b H n Dh] f32"]),  # an expression: the pipeline
    ("fn att$end(", ["fn attend(a: Attn, x: [b n D]) -> [b n D]"]),  # a definition
    ("x: [$b n D]) -> [b n D]:", ["size variable `b`"]),
    ("softmax(ov$er=m)", ["argument `over` of", "softmax(x, over=A)"]),
]


@pytest.mark.parametrize("where,expected", CASES, ids=[c[0] for c in CASES])
def test_hover(where, expected):
    marked = HEAD.replace(where.replace("$", ""), where.replace("$", "$0"), 1)
    assert marked != HEAD, where
    ws, path, m = workspace(marked, lib=LIB)
    h = hover(ws, path, m[0])
    assert h is not None
    for e in expected:
        assert e in h.markdown


def test_hover_span_is_the_name():
    ws, path, m = workspace(HEAD.replace("einsum(att, q", "einsum($0att$1, q"), lib=LIB)
    h = hover(ws, path, m[0])
    assert (h.start, h.end) == (m[0], m[1])


def test_hover_on_a_diagnostic_gives_its_explanation_and_link():
    src = HEAD.replace("b H n m, b H m Dh -> b H n Dh", "b H $0m n, b H m Dh -> b H n Dh")
    ws, path, m = workspace(src, lib=LIB)
    text = hover(ws, path, m[0]).markdown
    assert "**error[E0408]**: the pattern calls axis 3 `m`, but `m` is axis 4" in text
    assert "A pattern names an axis that the operand already has" in text
    assert f"[E0408 in the error index]({doc_url('E0408')})" in text


def test_serving_engine_codes_link_the_serving_engines_page():
    src = """\
        dim D = 4
        model M:
            w: [D D]
        @export(hf)
        fn f(x: [b D], $0m: M) -> [b D]:
            return linear(x, m.w)
        """
    ws, path, m = workspace(src)
    text = hover(ws, path, m[0]).markdown
    assert "E3306" in text and f"[Serving engines]({doc_url('E3306')})" in text


def test_code_summary_reads_the_docs_page():
    title, summary = code_summary("E0408")
    assert title.startswith("E0408:")
    assert summary.startswith("A pattern names an axis")


@pytest.mark.parametrize("src", ["", "fn", "dim D = \n", "$0", "fn f(x: [b]) -> [b]:\n    return $0(((\n"])
def test_hover_never_raises(src):
    ws, path, m = workspace(src)
    for off in range(0, len(ws.file(path).text) + 2):
        hover(ws, path, off)


DECORATED = """\
    dim D = 4
    model M:
        w: [D D]
    {deco}
    fn f(m: M, x: [b D]) -> [b D]:
        return linear(x, m.w)
    """


ALL = ["hf", "vllm", "gguf", "litert"]


@pytest.mark.parametrize("deco,says,targets", [
    ("@exp$0ort", "`@export`: exported for hf, vllm, gguf, litert (a bare `@export` is every target)", ALL),
    ("@exp$0ort(gguf, hf)", "`@export`: exported for hf, gguf", ["hf", "gguf"]),
    ("@exp$0ort(hf, nope)", "`@export`: exported for hf", ["hf"]),
    ("@exp$0ort(nope)", "`@export`: exported for no target: none of its names is a target (E0212)", []),
    ("@export(hf)\n@exp$0ort(gguf)", "`@export`: a second `@export` changes nothing; the function's first one "
                                     "names its targets", ["hf"]),
    ("@cach$0ed", "`@cached`: no decorator ShapeScript knows; it does not export the function (`@export` does)",
     None),
    ("@cach$0ed(hf)", "`@cached`: no decorator ShapeScript knows; it does not export the function (`@export` does)",
     None),
])
def test_hover_on_a_decorator_says_what_the_one_rule_says(deco, says, targets):
    """targets.py decides which targets a decorator exports for: a bare `@export` is every
    target (docs/serving-engines.md, Decisions), another decorator exports nothing."""
    ws, path, m = workspace(DECORATED.replace("{deco}", deco.replace("\n", "\n    ")))
    text = hover(ws, path, m[0]).markdown
    assert text.split("\n\n")[0] == says
    assert "exported for nothing" not in text
    exported = {it.name: [t for t in ALL if t in ts] for it, ts in ws.exported(ws.analyze(path))}
    assert exported.get("f") == targets  # what the checks, the lens and `export` take


MOE = """\
    dim D = 16
    dim F = 32
    dim E = 8
    dim K = 2

    model Moe:
        router: [E D]
        bias: [E]
        w_up: [E F D]
        w_down: [E D F]

    fn moe(p: Moe, x: [b n D]) -> [b n D]:
        ROUTE
        u = einsum(x, take(p.w_up, e, over=E): b n D, b n K F D -> b n K F)
        y = einsum(silu(u), take(p.w_down, e, over=E): b n K F, b n K D F -> b n K D)
        return sum(y * w, over=K)
    """


@pytest.mark.parametrize("route,words", [
    ("w, e = linear(x, p.router) |> topk(k=K, over=E)\n        w = softmax(w, over=K)",
     "routing: the softmax of the K chosen router logits (Mixtral; Qwen3-MoE with norm_topk_prob)"),
    ("w, e = linear(x, p.router) |> softmax(over=E) |> topk(k=K, over=E)\n        w = w / sum(w, over=K)",
     "routing: the softmax of the K chosen router logits (Mixtral; Qwen3-MoE with norm_topk_prob)"),
    ("w, e = linear(x, p.router) |> softmax(over=E) |> topk(k=K, over=E)",
     "routing: the softmax over all E router logits, the K largest kept as they are (Qwen3-MoE with "
     "norm_topk_prob=False)"),
    ("w, e = linear(x, p.router, p.bias) |> topk(k=K, over=E)\n        w = softmax(w, over=K)",
     "routing: a router with a bias, then the softmax of the K chosen logits (gpt-oss)"),
    ("w, e = linear(x, p.router) |> topk(k=K, over=E)\n        w = sigmoid(w)",
     "routing: as written (no fused routing an engine runs)"),
])
def test_hover_on_topk_shows_the_mixture_as_one(route, words):
    """§6.2: E experts, K per token, the routing named by what the function computes."""
    src = MOE.replace("ROUTE", route).replace("topk(k=K", "to$0pk(k=K")
    ws, path, m = workspace(src)
    text = hover(ws, path, m[0]).markdown
    assert "topk(x, k=K, over=A)" in text
    assert f"a mixture of `E` = 8 experts, `K` = 2 per token; {words}" in text
