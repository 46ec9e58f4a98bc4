"""Spec v0.3's rope scaling, partial rotary and softcaps (issue 32): the checker's errors at
the keyword, the evaluator and the generated code against transformers' own rotary
embeddings, a Llama 3.2 and a Qwen2-with-YaRN checkpoint (transformers' own classes,
random weights) imported into their sources and exported --hf, and what each feature
changes (the teeth)."""
from __future__ import annotations

import json
import os
import re

import pytest

from checkout import ROOT

np = pytest.importorskip("numpy")
from import_support import greedy, load_export, logits, max_diff, run_cli

torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")

LLAMA3 = os.path.join(ROOT, "examples", "llama3.ss")
QWEN2 = os.path.join(ROOT, "tests", "programs", "gguf", "qwen2.ss")
PROMPT = [int(t) for t in torch.randint(0, 300, (48,), generator=torch.Generator().manual_seed(3))]

# Llama 3.2's rope (config.json of Llama-3.2-1B), and a YaRN as Qwen2.5's long-context configs write it
LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
YARN_ROPE = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 32}


# ---------------------------------------------------------------- the checker
HEAD = "dim D = 64\ndim H = 2\ndim Dh = D / H\n\nfn f(x: [b H n Dh], pos: [b n] i64) -> [b H n Dh]:\n    return "
WRONG = [
    ('rope(x, pos, scaling="llama3", factor=8.0)', "E0206", "`rope` needs `low_freq_factor=`"),
    ('rope(x, pos, scaling="linear", factor=2.0, beta_fast=32.0)', "E0206",
     '`rope` takes no `beta_fast=` with scaling="linear"'),
    ("rope(x, pos, factor=2.0)", "E0206", '`rope` takes no `factor=` with scaling="none"'),
    ("rope(x, pos, rotary_dims=7)", "E0304",
     "`rotary_dims` must be an even compile-time integer, at most Dh (32), found 7"),
    ("rope(x, pos, rotary_dims=34)", "E0304",
     "`rotary_dims` must be an even compile-time integer, at most Dh (32), found 34"),
    ('rope(x, pos, scaling="ntk", factor=2.0)', "E0304",
     '`scaling` must be "none", "linear", "llama3" or "yarn", found "ntk"'),
    ('rope(x, pos, scaling="linear", factor=0.0)', "E0304",
     "`factor` must be a positive compile-time number, found 0"),
    ('rope(x, pos, scaling="llama3", factor=8.0, low_freq_factor=4.0, high_freq_factor=1.0, '
     'original_positions=8192)', "E0304", "`high_freq_factor` must be greater than low_freq_factor (4), found 1"),
    ('rope(x, pos, scaling="yarn", factor=4.0, original_positions=32.5, beta_fast=32.0, beta_slow=1.0, '
     'attention_factor=1.1)', "E0304", "`original_positions` must be a positive compile-time integer, found 32.5"),
    ('rope(x, pos, scaling="linear", factor=x)', "E0304",
     "`factor` must be a positive compile-time number, found [b H n Dh]"),
    ("softcap(x, 0.0)", "E0304", "`c` must be a positive compile-time number, found 0"),
    ("scaled_dot_product_attention(x, x, x, attn_mask=causal[n n], softcap=-1.0)", "E0304",
     "`softcap` must be a positive compile-time number, found -1"),
]


def _check(text: str) -> list:
    from shapescript_core.diagnostics import Severity
    from support import check
    _, diags = check(text)
    return [d for d in diags if d.severity == Severity.ERROR]


@pytest.mark.parametrize("call,code,headline", WRONG, ids=[w[0][:40] for w in WRONG])
def test_a_wrong_keyword_is_one_error_at_the_keyword(call, code, headline):
    text = HEAD + call + "\n"
    got = _check(text)
    assert [(d.code, d.message) for d in got] == [(code, headline)]
    start = got[0].span.abs_start
    name = headline.split("`")[1]
    if code == "E0304" and name + "=" in text:  # at the keyword's value
        at = text.rindex(name + "=") if name != "scaling" else text.index("scaling=")
        assert start == at + len(name) + 1
    elif "takes no" in headline:  # at the keyword that doesn't belong
        name = headline.split("`")[3].rstrip("=")
        assert start == text.index(name + "=", len(HEAD)) + len(name) + 1
    else:  # a missing keyword: at the call
        assert len(HEAD) <= start < len(text) - 1


def test_the_v03_examples_and_keywords_check_clean():
    text = HEAD[:-len("    return ")] + (
        '    a = rope(x, pos, theta=500000.0, scaling="llama3", factor=32.0, low_freq_factor=1.0, '
        'high_freq_factor=4.0, original_positions=8192)\n'
        '    c = rope(a, pos, scaling="linear", factor=2.0, rotary_dims=16)\n'
        '    e = rope(c, pos, scaling="yarn", factor=4.0, original_positions=32, beta_fast=32.0, beta_slow=1.0, '
        'attention_factor=1.1386)\n'
        '    k = scaled_dot_product_attention(e, e, e, attn_mask=causal[n n], softcap=50.0)\n'
        '    return softcap(k, 30.0)\n')
    assert _check(text) == []
    for example in (LLAMA3, os.path.join(ROOT, "examples", "gemma2.ss"), os.path.join(ROOT, "examples", "pythia.ss")):
        # each @export(hf, vllm, gguf): every target's checks, E3313 too
        r = run_cli("check", example)
        assert r.returncode == 0 and "error" not in r.stdout and "warning" not in r.stdout, r.stdout


def test_hover_on_a_rope_shows_its_scaling():
    from shapescript_core.ide.hover import hover
    from shapescript_core.workspace import Workspace
    ws = Workspace({})
    text = open(LLAMA3, encoding="utf-8").read()
    ws.set_text(LLAMA3, text)
    h = hover(ws, LLAMA3, text.index("rope(pos") + 1)
    assert "scaling: `llama3 (factor 32, low_freq_factor 1, high_freq_factor 4, original_positions 8192)`" \
        in h.markdown


# ---------------------------------------------------------------- the rotation itself
ROTATIONS = {
    "linear": ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, 'scaling="linear", factor=4.0', None),
    "llama3": (dict(LLAMA3_ROPE), 'theta=500000.0, scaling="llama3", factor=32.0, low_freq_factor=1.0, '
               'high_freq_factor=4.0, original_positions=8192', None),
    "yarn": ({"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 32,
              "beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": 1.1386},
             'theta=1000000.0, scaling="yarn", factor=4.0, original_positions=32, beta_fast=32.0, beta_slow=1.0, '
             'attention_factor=1.1386', None),
    "partial": ({"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}, "rotary_dims=16",
                16),
    "partial_llama3": (dict(LLAMA3_ROPE, partial_rotary_factor=0.5), 'theta=500000.0, scaling="llama3", '
                       'factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=8192, '
                       'rotary_dims=32', 32),
}


def _transformers_rotation(rope: dict, x, pos):
    """GPT-NeoX's rotary embedding and apply_rotary_pos_emb: rope_type, fields, partial rotary."""
    from transformers.models.gpt_neox import modeling_gpt_neox as neox
    cfg = tf.GPTNeoXConfig(hidden_size=128, num_attention_heads=2, max_position_embeddings=4096,
                           rope_parameters={"partial_rotary_factor": 1.0, **rope})
    emb = neox.GPTNeoXRotaryEmbedding(cfg)
    cos, sin = emb(x, pos)
    return neox.apply_rotary_pos_emb(x, x, cos, sin)[0]


@pytest.mark.parametrize("kind", sorted(ROTATIONS))
def test_the_evaluator_and_the_export_rotate_as_transformers(kind, tmp_path):
    from shapescript_core.evaluate import evaluate
    rope, keywords, _ = ROTATIONS[kind]
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 2, 40, 64, generator=g)
    pos = (torch.arange(40) * 50).unsqueeze(0)  # positions to 1950: past yarn's original 32 and llama3's bands
    want = _transformers_rotation(rope, x, pos)
    source = ("dim D = 128\ndim H = 2\ndim Dh = D / H\n\nmodel M:\n    w: [D]\n\n"
              "fn f(m: M, x: [b H n Dh], pos: [b n] i64) -> [b H n Dh]:\n"
              f"    return rope(x, pos, {keywords})\n")
    got = evaluate(source, "f", x=x, pos=pos)
    assert max_diff(got, want) < 1e-5
    src = tmp_path / "r.ss"
    src.write_text(source, encoding="utf-8")
    out = tmp_path / f"rotate_{kind}"  # transformers caches remote code by folder and file name
    r = run_cli("export", str(src), "--hf", "-o", str(out), "--random-weights", "--force",
                "--fn", "f")
    assert r.returncode == 0, r.stdout + r.stderr
    from transformers import AutoModel
    model = AutoModel.from_pretrained(str(out), trust_remote_code=True, dtype=torch.float32)
    with torch.no_grad():
        exported = model(x=x, pos=pos)
    assert max_diff(exported, want) < 1e-5
    # the teeth: without the scaling (or rotating every feature) the rotation is another one
    plain = _transformers_rotation({"rope_type": "default", "rope_theta": rope["rope_theta"]}, x, pos)
    assert max_diff(plain, want) > 1e-2


# ---------------------------------------------------------------- checkpoints, imported
def _randomize(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if p.dim() == 1 else 0.08 * torch.randn_like(p))
    model.config._attn_implementation = "eager"
    return model.eval()


def llama3_checkpoint(directory: str) -> str:
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=300, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=131072,
                         rms_norm_eps=1e-5, rope_parameters=dict(LLAMA3_ROPE), tie_word_embeddings=True)
    _randomize(tf.LlamaForCausalLM(cfg)).save_pretrained(directory)
    return directory


def qwen2_yarn_checkpoint(directory: str) -> str:
    torch.manual_seed(1)
    cfg = tf.Qwen2Config(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         rms_norm_eps=1e-6, rope_parameters=dict(YARN_ROPE), use_sliding_window=False,
                         tie_word_embeddings=False)
    _randomize(tf.Qwen2ForCausalLM(cfg)).save_pretrained(directory)
    return directory


LLAMA3_DIMS = ("--dim", "V=300", "--dim", "D=128", "--dim", "H=2", "--dim", "Hkv=1", "--dim", "F=256",
               "--dim", "L=2")
YARN = ('rope(pos, theta=1000000.0, scaling="yarn", factor=4.0, original_positions=32, beta_fast=32.0, '
        'beta_slow=1.0, attention_factor=1.1386294361119891)')


def _export(source: str, ckpt: str, out: str, *extra):
    r = run_cli("export", source, "--hf", "-o", out, "--weights", ckpt, "--force", *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def _both(out: str, ckpt: str):
    ours = load_export(out)
    theirs = tf.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32).eval()
    theirs.config._attn_implementation = "eager"
    return ours, theirs


def test_a_llama_3_2_checkpoint_imported_runs_as_transformers(tmp_path):
    ckpt = llama3_checkpoint(str(tmp_path / "ckpt"))
    out = str(tmp_path / "llama3_out")
    said = _export(LLAMA3, ckpt, out, *LLAMA3_DIMS)
    assert "E3316" not in said, said
    cfg = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert cfg["rope_parameters"] == LLAMA3_ROPE
    ours, theirs = _both(out, ckpt)
    assert max_diff(logits(ours, PROMPT), logits(theirs, PROMPT)) < 1e-4
    want = greedy(theirs, PROMPT[:6], 10)
    assert greedy(ours, PROMPT[:6], 10) == want
    with torch.no_grad():  # without the KV cache: the same tokens
        no_cache = ours.generate(torch.tensor([PROMPT[:6]]), max_new_tokens=10, do_sample=False, use_cache=False,
                                 pad_token_id=0)
    assert no_cache[0].tolist() == want


def test_a_source_without_the_checkpoints_scaling_is_warned_and_differs(tmp_path):
    ckpt = llama3_checkpoint(str(tmp_path / "ckpt"))
    text = open(LLAMA3, encoding="utf-8").read()
    plain = re.sub(r'rope\(pos, theta=500000.0,[^)]*\)', "rope(pos, theta=500000.0)", text)
    other = text.replace("factor=32.0", "factor=8.0")
    assert plain != text and other != text
    for name, source in (("plain", plain), ("other", other)):
        (tmp_path / f"llama3_{name}.ss").write_text(source, encoding="utf-8")
    said = _export(str(tmp_path / "llama3_plain.ss"), ckpt, str(tmp_path / "llama3_plain"), *LLAMA3_DIMS)
    assert [x for x in said.splitlines() if "E3316" in x] == [
        "shapescript: warning: [E3316] the source's rope scaling is none, but the checkpoint's config.json "
        "rope_parameters says llama3 (factor 32, low_freq_factor 1, high_freq_factor 4, original_positions 8192): "
        "the export keeps the source's, and its outputs will differ from the original model's"]
    said = _export(str(tmp_path / "llama3_other.ss"), ckpt, str(tmp_path / "llama3_other"), *LLAMA3_DIMS)
    assert "the source's rope scaling is llama3 (factor 8," in said and "says llama3 (factor 32," in said
    theirs = tf.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32).eval()
    assert max_diff(logits(load_export(str(tmp_path / "llama3_plain")), PROMPT), logits(theirs, PROMPT)) > 1e-2


def test_a_qwen2_checkpoint_with_yarn_imported_runs_as_transformers(tmp_path):
    ckpt = qwen2_yarn_checkpoint(str(tmp_path / "ckpt"))
    text = open(QWEN2, encoding="utf-8").read().replace("rope(pos, theta=1000000.0)", YARN)
    text = text.replace("@export(gguf)", "@export(hf)")
    (tmp_path / "qwen2_yarn.ss").write_text(text, encoding="utf-8")
    said = _export(str(tmp_path / "qwen2_yarn.ss"), ckpt, str(tmp_path / "qwen2_yarn"), "--fn", "forward")
    assert "E3316" not in said, said
    ours, theirs = _both(str(tmp_path / "qwen2_yarn"), ckpt)
    prompt = [t % 256 for t in PROMPT]  # 48 positions: past the original 32
    assert max_diff(logits(ours, prompt), logits(theirs, prompt)) < 1e-4
    assert greedy(ours, prompt[:6], 10) == greedy(theirs, prompt[:6], 10)
    # the teeth: the same checkpoint in the source without yarn
    (tmp_path / "qwen2_plain.ss").write_text(text.replace(YARN, "rope(pos, theta=1000000.0)"), encoding="utf-8")
    said = _export(str(tmp_path / "qwen2_plain.ss"), ckpt, str(tmp_path / "qwen2_plain"), "--fn", "forward")
    assert "rope scaling is none, but the checkpoint's config.json rope_parameters says yarn" in said
    assert max_diff(logits(load_export(str(tmp_path / "qwen2_plain")), prompt), logits(theirs, prompt)) > 1e-2


def test_a_yarn_checkpoint_that_does_not_truncate_is_warned(tmp_path):
    """gpt-oss's yarn says `truncate: false`: transformers keeps the correction range's ends
    unrounded, which the language's yarn (rounded, transformers' default) doesn't compute.
    The import says so (E3316) rather than export another rotation silently."""
    ckpt = qwen2_yarn_checkpoint(str(tmp_path / "ckpt"))
    cfg_path = os.path.join(ckpt, "config.json")
    cfg = json.load(open(cfg_path, encoding="utf-8"))
    cfg["rope_parameters"]["truncate"] = False
    json.dump(cfg, open(cfg_path, "w", encoding="utf-8"))
    text = open(QWEN2, encoding="utf-8").read().replace("rope(pos, theta=1000000.0)", YARN)
    (tmp_path / "qwen2_yarn.ss").write_text(text.replace("@export(gguf)", "@export(hf)"), encoding="utf-8")
    said = _export(str(tmp_path / "qwen2_yarn.ss"), ckpt, str(tmp_path / "out"), "--fn", "forward")
    assert [x for x in said.splitlines() if "E3316" in x] == [
        "shapescript: warning: [E3316] the source's rope scaling is yarn (factor 4, original_positions 32, "
        "beta_fast 32, beta_slow 1, attention_factor 1.138629436111989), but the checkpoint's config.json "
        "rope_parameters says yarn (factor 4, original_positions 32, beta_fast 32, beta_slow 1, attention_factor "
        "1.138629436111989) with its correction range not rounded (truncate: false, which the language's yarn "
        "doesn't compute): the export keeps the source's, and its outputs will differ from the original model's"]
    # the teeth: transformers' own model computes another function without the rounding
    ours, theirs = _both(str(tmp_path / "out"), ckpt)
    prompt = [t % 256 for t in PROMPT]
    assert max_diff(logits(ours, prompt), logits(theirs, prompt)) > 1e-4


# ---------------------------------------------------------------- a language model of our own
LM = """dim V = 96
dim D = 128
dim H = 2
dim Dh = D / H
dim F = 192
dim L = 2

model Block:
    norm: [D] = ones
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wo: [D D]
    w_up: [F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    head: [V D]

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = rms_norm(x, p.norm, over=D)
    q = linear(h, p.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, ROPE)
    k = linear(h, p.wk) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, ROPE)
    v = linear(h, p.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]SOFTCAP)
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.wo))
    return x + (gelu_tanh(linear(x, p.w_up)) |> linear(p.w_down))

@export(hf)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D) |> linear(m.head)
"""


@pytest.mark.parametrize("rope,softcap", [
    ('rotary_dims=16, theta=10000.0', ", softcap=2.0"),
    ('scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16', ""),
    ('scaling="yarn", factor=4.0, original_positions=8, beta_fast=32.0, beta_slow=1.0, attention_factor=1.2, '
     'rotary_dims=32', ", softcap=3.0"),
    ('scaling="linear", factor=2.0', ""),
    ("theta=10000.0", " FINAL"),
], ids=["partial+softcap", "llama3", "yarn+partial+softcap", "linear", "final_softcap"])
def test_a_language_model_with_v03_features_exports_as_the_evaluator_computes(rope, softcap, tmp_path):
    """The --hf export (its rotary table in `rotary_emb`, its attention modules with the KV
    cache, the lm_head's logits capped) against the reference evaluator, all positions and
    token by token."""
    from differential_support import Case, check_hf
    source = LM.replace("ROPE", rope).replace("SOFTCAP", softcap)
    if " FINAL" in source:
        softcap = "|> linear(m.head) |> softcap(1.5)"
        source = source.replace(" FINAL", "").replace("|> linear(m.head)", softcap)
    assert _check(source) == []
    assert check_hf(Case(source, lm=True, seed=5), str(tmp_path)) is None
    if softcap:  # the teeth: the softcap matters at these weights
        from differential_support import evaluator_outputs
        _, _, _, capped = evaluator_outputs(Case(source, lm=True, seed=5))
        uncapped = source.replace(softcap, "|> linear(m.head)" if "m.head" in softcap else "")
        _, _, _, free = evaluator_outputs(Case(uncapped, lm=True, seed=5))
        assert max_diff(capped, free) > 1e-2


@pytest.mark.parametrize("rope,softcap,said,line", [
    ('scaling="linear", factor=2.0', "", "rope scaling (linear)", 25),
    ("rotary_dims=16", "", "a partial rotary (rotary_dims)", 25),
    ("theta=10000.0", ", softcap=2.0", "a softcap", 28),
    ('scaling="linear", factor=2.0', ", softcap=2.0", "rope scaling (linear) and a softcap", 25),
], ids=["scaling", "partial", "softcap", "both"])
def test_litert_refuses_what_it_would_not_keep(rope, softcap, said, line, tmp_path):
    """E3319 before anything is written or converted (no LiteRT environment needed: the
    export checks refuse it), at the first operation LiteRT lacks, a label at each other."""
    from differential_support import Case, export
    from shapescript_core.evaluate import load
    source = LM.replace("ROPE", rope).replace("SOFTCAP", softcap)
    weights = load(source).random_weights("forward", seed=0)
    r = export(Case(source, lm=True), weights, str(tmp_path / "litert"), target="litert")
    assert not r.ok
    assert [d.code for d in r.diagnostics] == ["E3319"]
    d = r.diagnostics[0]
    assert d.message == f"LiteRT can't run `forward`: it uses {said}"
    assert source.count("\n", 0, d.span.abs_start) + 1 == line
    assert len(d.labels) == said.count(" and ")  # the primary label, and one for each other feature
    assert not os.path.exists(tmp_path / "litert")


def test_vllm_serves_the_v03_features_as_the_evaluator_computes(tmp_path):
    """vLLM on the CPU runs the --vllm export's model, through its Transformers backend (the
    rotary table of our own code, scaled and partial; the attention's softcap from
    config.json's attn_logit_softcapping: vLLM's CPU attention caps) and as the plugin's
    native model. Greedy tokens equal the evaluator's on both paths."""
    from differential_support import Case, export, quiet
    from envs import require_vllm, run_in_env
    from shapescript_core.evaluate import load
    from test_differential_vllm import NEW_TOKENS, SERVE, evaluator_greedy
    prompts = [[5, 17, 90, 3, 50, 8, 1, 44, 60, 2, 71, 30], [11, 20, 7]]  # ids below V = 96
    quiet()
    want, outs = {}, []
    for k, (rope, softcap) in enumerate([
            ('scaling="yarn", factor=4.0, original_positions=32, beta_fast=32.0, beta_slow=1.0, '
             'attention_factor=1.2, rotary_dims=32', ", softcap=3.0"),
            ('scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16', ""),
            ("rotary_dims=16", ", softcap=2.0 FINAL")]):
        source = LM.replace("ROPE", rope).replace("SOFTCAP", softcap).replace("@export(hf)", "@export(vllm)")
        # the logits capped too (config.json's final_logit_softcapping; greedy tokens can't see a
        # final cap, which keeps their order: its numbers are the --hf tests')
        if "FINAL" in source:
            source = source.replace(" FINAL", "").replace("|> linear(m.head)", "|> linear(m.head) |> softcap(1.5)")
        prog = load(source)
        weights = prog.random_weights("forward", seed=k, std=0.5)
        out = str(tmp_path / f"vllm_v03_{k}")
        r = export(Case(source, lm=True, seed=k), weights, out, target="vllm")
        assert r.ok, r.message
        want[out] = [evaluator_greedy(prog, weights, p) for p in prompts]
        outs.append(out)
        cfg = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
        if softcap:
            assert cfg["attn_logit_softcapping"] == float(softcap.split("=")[1].split()[0])
        assert cfg.get("final_logit_softcapping") == (1.5 if "FINAL" in softcap else None)
    got = run_in_env(require_vllm(), SERVE, json.dumps(prompts), *outs, timeout=900).result
    for out in outs:
        assert got[out] == want[out], f"{out}: vLLM {got[out]}, the evaluator {want[out]}"
    # the native model of each export's plugin: its own rotary code, vLLM's attention with
    # logits_soft_cap, the LogitsProcessor's soft_cap
    from test_partial_rotary import VLLM_GREEDY, install_plugin
    for k, out in enumerate(outs):
        site = install_plugin(require_vllm(), out, tmp_path / f"site_{k}")
        r = run_in_env(require_vllm(), VLLM_GREEDY, out, "native", json.dumps(prompts), NEW_TOKENS, timeout=480,
                       env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "PYTHONPATH": site}).result
        assert r["classes"][0].startswith("shapescript_vllm_"), r
        assert r["got"] == want[out], f"{out} (native): vLLM {r['got']}, the evaluator {want[out]}"


# ---------------------------------------------------------------- Gemma 2's softcaps
GEMMA2 = os.path.join(ROOT, "examples", "gemma2.ss")


def _gemma2_source(tmp_path, attn: str, final: str) -> str:
    """examples/gemma2.ss with other caps ("" drops one)."""
    text = open(GEMMA2, encoding="utf-8").read()
    text = text.replace(",\n        softcap=50.0)", f", softcap={attn})" if attn else ")")
    text = text.replace(" |> softcap(30.0)", f" |> softcap({final})" if final else "")
    assert "50.0" not in text and "30.0" not in text
    path = tmp_path / f"gemma2_{attn or 'none'}_{final or 'none'}.ss"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_gemma2_checkpoint_with_both_softcaps_runs_as_transformers_and_in_llama_cpp(tmp_path):
    """Caps small enough to bind at these weights (5 and 3: Gemma 2's own 50 and 30 are
    examples/gemma2.ss's), so that each one matters."""
    import gguf
    from test_gguf_gemma import AT_SIZE, PROMPT, TOLERANCE, gemma2, greedy_hf, run_llama_cpp
    model = gemma2(caps=(5.0, 3.0))
    ckpt = str(tmp_path / "ckpt")
    model.save_pretrained(ckpt)
    source = _gemma2_source(tmp_path, "5.0", "3.0")
    said = _export(source, ckpt, str(tmp_path / "gemma2_caps_hf"), *AT_SIZE)
    assert "E3316" not in said, said
    cfg = json.load(open(tmp_path / "gemma2_caps_hf" / "config.json", encoding="utf-8"))
    assert (cfg["attn_logit_softcapping"], cfg["final_logit_softcapping"]) == (5.0, 3.0)
    ours = load_export(str(tmp_path / "gemma2_caps_hf"))
    want = logits(model, PROMPT)
    assert max_diff(logits(ours, PROMPT), want) < 1e-4
    assert float(np.abs(want).max()) <= 3.0  # the logits are capped
    r = run_cli("export", source, "--gguf", "-o", str(tmp_path / "g.gguf"), "--weights", ckpt, "--force", *AT_SIZE)
    assert r.returncode == 0 and "E3316" not in r.stdout + r.stderr, r.stdout + r.stderr
    f = gguf.GGUFReader(str(tmp_path / "g.gguf"))
    assert f.get_field("gemma2.attn_logit_softcapping").contents() == 5.0
    assert f.get_field("gemma2.final_logit_softcapping").contents() == 3.0
    got, tokens = run_llama_cpp(str(tmp_path / "g.gguf"), PROMPT)
    assert max_diff(got, want) < TOLERANCE
    assert tokens == greedy_hf(model, PROMPT, use_cache=True)
    # the teeth: each cap dropped from the source moves the logits, and is said
    for attn, final, missing in (("", "3.0", "attention logit softcapping"), ("5.0", "", "final logit softcapping")):
        out = str(tmp_path / f"gemma2_{attn or 'none'}_{final or 'none'}_hf")
        said = _export(_gemma2_source(tmp_path, attn, final), ckpt, out, *AT_SIZE)
        assert f"the source's {missing} is none" in said
        assert max_diff(logits(load_export(out), PROMPT), want) > 1e-2


def test_a_linear_scaled_llama_runs_in_llama_cpp_as_in_transformers(tmp_path):
    """--gguf writes linear scaling as llama.cpp reads it (rope.scaling.type, .factor);
    llama3 and yarn: tests/test_gguf_v03.py."""
    import gguf
    from gguf_support import hf_llama, llama_cpp_logits
    model = hf_llama(seed=4)
    model.config.rope_parameters = {"rope_type": "linear", "rope_theta": 500000.0, "factor": 4.0}
    model.model.rotary_emb = type(model.model.rotary_emb)(model.config)  # the table of the new rope
    ckpt = str(tmp_path / "ckpt")
    model.save_pretrained(ckpt)
    text = open(os.path.join(ROOT, "examples", "llama.ss"), encoding="utf-8").read()
    text = text.replace("rope(pos, theta=500000.0)", 'rope(pos, theta=500000.0, scaling="linear", factor=4.0)')
    (tmp_path / "llama_linear.ss").write_text(text, encoding="utf-8")
    dims = ("--dim", "V=256", "--dim", "D=256", "--dim", "H=4", "--dim", "Hkv=2", "--dim", "F=512", "--dim", "L=2")
    out = str(tmp_path / "l.gguf")
    r = run_cli("export", str(tmp_path / "llama_linear.ss"), "--gguf", "-o", out, "--weights", ckpt, "--force", *dims)
    assert r.returncode == 0 and "E3316" not in r.stdout + r.stderr, r.stdout + r.stderr
    f = gguf.GGUFReader(out)
    assert f.get_field("llama.rope.scaling.type").contents() == "linear"
    assert f.get_field("llama.rope.scaling.factor").contents() == 4.0
    prompt = [t % 256 for t in PROMPT]
    want = logits(model, prompt)
    assert max_diff(llama_cpp_logits(out, prompt), want) < 1e-3
    plain = str(tmp_path / "plain.gguf")  # the teeth: the same weights unscaled
    r = run_cli("export", os.path.join(ROOT, "examples", "llama.ss"), "--gguf", "-o", plain, "--weights", ckpt,
                "--force", *dims)
    assert "the source's rope scaling is none" in r.stdout + r.stderr
    assert max_diff(llama_cpp_logits(plain, prompt), want) > 1e-2
