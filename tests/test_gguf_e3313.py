"""E3313: a model outside llama, qwen2 and gpt2 is refused, naming its first departure,
as the editor types (workspace diagnostics, the language server), in `check --target
gguf`, and in `export --gguf` (exit 1, nothing written). Each case is a program of
tests/programs/gguf/e3313_*.ss with the line and the words of its departure."""
import json
import os

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from checkout import program as _program
from checkout import ROOT, read_program, shapescript as run_cli
from lsp_support import codes, config, initialize, open_doc, uri_of, wait_version
from shapescript_core.diagnostics import Severity
from shapescript_core.workspace import Workspace


def program(name: str) -> str:
    return _program("gguf", name)


HEAD = "no llama.cpp architecture runs this model: "
CASES = [
    ("e3313_tanh.ss", 32, "`tanh` on the residual stream (line 32), where llama adds each sublayer's "
                          "output to the residual stream and nothing else"),
    ("e3313_gelu_mlp.ss", 43, "the MLP's activation is gelu with no gate (line 43), where llama has "
                              "silu(gate(h)) * up(h) into a down projection (SwiGLU)"),
    ("e3313_gpt2_rope.ss", 33, "rope is applied to the queries (line 33), where gpt2 has learned position "
                               "embeddings, no rope"),
]


def errors(path, text=None, requests=None):
    ws = Workspace()
    ws.set_text(path, text if text is not None else open(path, encoding="utf-8").read())
    if requests:
        ws.set_export_requests({path: requests})
    return [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR]


@pytest.mark.parametrize("name,line,reason", CASES, ids=[c[0] for c in CASES])
def test_the_editor_shows_the_first_departure(name, line, reason):
    path = program(name)
    (d,) = errors(path)
    assert (d.code, d.message) == ("E3313", HEAD + reason)
    text = open(path, encoding="utf-8").read()
    assert text.count("\n", 0, d.span.abs_start) + 1 == line
    assert "--hf" in d.helps[0]


@pytest.mark.parametrize("name,line,reason", CASES, ids=[c[0] for c in CASES])
def test_check_target_gguf_reports_it_at_its_line(name, line, reason):
    r = run_cli("check", "--format", "json", "--target", "gguf", program(name))
    assert r.returncode == 1
    found = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    assert [(f["code"], f["range"]["start"]["line"], f["message"]) for f in found] == \
        [("E3313", line, HEAD + reason)]


@pytest.mark.parametrize("name,line,reason", CASES, ids=[c[0] for c in CASES])
def test_export_gguf_refuses_and_writes_nothing(tmp_path, name, line, reason):
    out = tmp_path / "m.gguf"
    r = run_cli("export", program(name), "--gguf", "-o", out, "--random-weights")  # refused before any weight
    assert r.returncode == 1
    assert "E3313" in r.stdout + r.stderr and reason in r.stdout + r.stderr
    assert sorted(os.listdir(tmp_path)) == []


def test_only_where_gguf_was_asked_for():
    # the same model for vLLM is fine; a plain `forward` (rule 2: every target implied) is
    # not held to llama.cpp's list; asking for gguf (check --target gguf) holds it
    path = program("e3313_tanh.ss")
    src = open(path, encoding="utf-8").read()
    assert [d.code for d in errors(path, src.replace("@export(hf, vllm, gguf)", "@export(hf, vllm)"))] == []
    plain = src.replace("@export(hf, vllm, gguf)\n", "")
    assert [d.code for d in errors(path, plain)] == []
    assert [d.code for d in errors(path, plain, [(None, {"gguf"})])] == ["E3313"]


def test_supported_models_check_clean():
    for name in ("llama_variant.ss", "llama_fused.ss", "llama_qkv.ss", "llama_interleaved_tied.ss", "qwen2.ss",
                 "gemma3.ss", "gemma2.ss"):
        assert [(d.code, d.message) for d in errors(program(name))] == [], name


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_language_server_publishes_it(client: LanguageClient, tmp_path):
    src = open(program("e3313_gelu_mlp.ss"), encoding="utf-8").read()
    uri = uri_of(tmp_path / "lm.ss")
    open_doc(client, uri, src)
    p = await wait_version(client, uri, 1)
    assert codes(p) == ["E3313"]
    (d,) = p.diagnostics
    assert d.range.start.line == 42 and d.message.startswith(HEAD + CASES[1][2])
    assert d.code_description.href.endswith("E3313.md") or "e3313" in d.code_description.href.lower()


LLAMA = read_program("ok", "llama.ss")
EDITS = [  # conformance/ok/llama.ss changed in one place -> the words of its departure
    ("scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])",
     "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=0.5)",
     "the attention's scale is 0.5 (line 42), where llama has the default 1/sqrt(Dh)"),
    ("k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)", "k = k |> repeat(b Hkv n Dh -> b (G Hkv) n Dh)",
     "keys and values are repeated in different orders (line 41), where llama repeats both the same way"),
    ("return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))",
     "return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-6))",
     "this norm's eps is 1e-06 (line 50), where the others' is 1e-05: llama has one eps"),
    ("""    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))""",
     """    h = rms_norm(x, blk.attn_norm, over=D, eps=1e-5)
    return x + attention(blk.attn, h, pos) + mlp(blk.mlp, h)""",
     "this `+` (line 50) joins two sublayers side by side (a parallel block)"),
    ("return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)", "return x |> linear(m.lm_head)",
     "the output layer reads the residual stream directly (line 57), where every llama.cpp architecture "
     "has a norm before it"),
]


@pytest.mark.parametrize("old,new,words", EDITS, ids=["scale", "repeat-order", "eps", "parallel", "no-norm"])
def test_departures_name_what_llama_has_there(old, new, words):
    assert old in LLAMA
    (d,) = errors("/tmp/shapescript-gguf/llama_edit.ss", LLAMA.replace(old, new))
    assert d.code == "E3313" and d.message.startswith(HEAD + words)


def test_a_window_llama_cpp_runs_only_as_gemma3_is_never_dropped(tmp_path):
    """A llama with a sliding window (Mistral): llama.cpp's llama has none, so the export
    refuses it rather than writing a model that attends further."""
    src = LLAMA.replace("scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])",
                        "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], window=4096)")
    words = ("the attention has a sliding window of 4096 (line 42), where llama has full attention "
             "(llama.cpp runs a sliding window only as gemma2 or gemma3)")
    (d,) = errors("/tmp/shapescript-gguf/llama_window.ss", src)
    assert d.code == "E3313" and d.message == HEAD + words
    path = tmp_path / "mistral.ss"
    path.write_text(src, encoding="utf-8")
    r = run_cli("export", str(path), "--gguf", "-o", str(tmp_path / "m.gguf"), "--random-weights")
    assert r.returncode == 1 and words in r.stdout + r.stderr
    assert sorted(os.listdir(tmp_path)) == ["mistral.ss"]


def test_a_window_departure_names_the_family_the_attention_belongs_to():
    """A qwen3 (per-head norms on queries and keys) with a sliding window: the label names
    qwen3, the architecture it is closest to, not llama (which `blocks` would only name
    once every block was read)."""
    src = open(os.path.join(ROOT, "examples", "qwen3.ss"), encoding="utf-8").read()
    old = "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])"
    assert old in src
    for name, size in (("V", 64), ("D", 32), ("H", 4), ("Hkv", 2), ("Dh", 8), ("F", 48), ("L", 2)):
        assert f"\ndim {name}\n" in src
        src = src.replace(f"\ndim {name}\n", f"\ndim {name} = {size}\n")
    (d,) = errors("/tmp/shapescript-gguf/qwen3_window.ss",
                  src.replace(old, "scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], window=512)"))
    assert d.code == "E3313"
    assert d.message == HEAD + ("the attention has a sliding window of 512 (line 52), where qwen3 has full "
                                "attention (llama.cpp runs a sliding window only as gemma2 or gemma3)")
    assert d.primary_label == "the closest architecture is qwen3"


GEMMA3 = open(program("gemma3.ss"), encoding="utf-8").read()
GEMMA3_EDITS = [  # tests/programs/gguf/gemma3.ss changed in one place -> the words of its departure
    ("(gelu_tanh(linear(x, p.w_gate))", "(silu(linear(x, p.w_gate))",
     "the MLP's gate uses `silu` (line 61), where gemma3 has gelu_tanh(gate(h)) * up(h) into a down "
     "projection (GeGLU)"),
    ("x = embedding(ids, m.embed) * sqrt(D)", "x = embedding(ids, m.embed)",
     "the residual stream starts from the token embedding unscaled (line 71), where gemma3 has the token "
     "embedding times sqrt(D) at the start of the residual stream"),
    ("    x = x + rms_norm(h, 1.0 + blk.post_attn_norm, over=D, eps=1e-6)", "    x = x + h",
     "the block's first sublayer's output is added to the residual stream without a norm (line 65), where "
     "gemma3 has attention then an MLP, each as x + rms_norm(sublayer(rms_norm(x)))"),
    ("        window = W if local else P", "        window = W if i < 3 else 16 if local else P",
     "this attention's window is 16 (line 57), where the first's is 8: gemma3 has one sliding window"),
    ("        theta = 10000.0 if local else 1000000.0", "        theta = 10000.0 if i < 2 else 1000000.0",
     "this sliding-window layer's rope theta is 1000000 (line 57), where the first sliding-window layer's is "
     "10000: gemma3 has one theta for each kind of layer"),
]


@pytest.mark.parametrize("old,new,words", GEMMA3_EDITS,
                         ids=["silu", "unscaled-embedding", "no-post-norm", "two-windows", "two-thetas"])
def test_departures_from_gemma3_name_what_gemma3_has_there(old, new, words, tmp_path):
    assert old in GEMMA3
    src = GEMMA3.replace(old, new)
    (d,) = errors("/tmp/shapescript-gguf/gemma3_edit.ss", src)  # layers that differ past the first two too
    assert d.code == "E3313" and d.message == HEAD + words
    if "window" in words or "theta" in words:  # and the export, which traces every layer
        path = tmp_path / "gemma3.ss"
        path.write_text(src, encoding="utf-8")
        r = run_cli("export", str(path), "--gguf", "-o", str(tmp_path / "m.gguf"), "--random-weights")
        assert r.returncode == 1 and HEAD + words in r.stdout + r.stderr
        assert sorted(os.listdir(tmp_path)) == ["gemma3.ss"]
