"""Quantized GGUF (issue 34): `--dtype q4_0 | q4_k_m | q5_k_m | q6_k | q8_0` writes what
llama.cpp's own quantizer writes from the same f32 model.

For each type, the model is exported with `--dtype TYPE`, and llama.cpp's converter's f32
file of the same checkpoint is quantized by `llama_model_quantize` to the same type: the
two files hold the same tensors, each of the same type with the same bytes, and
llama.cpp gives the same greedy text from both. The trained tiny story model
(examples/tiny_story, 64 wide: its rows are too short for the K-quants' blocks of 256,
so llama.cpp's recipe falls back for some tensors) and a 256-wide Llama whose rows take
every K-quant. q8_0 is written by the writer itself (gguf-py's Q8_0): the same bytes all
the same. A machine without llama-cpp-python gets one message naming what to install.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from checkout import ROOT

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from import_support import convert_hf_to_gguf, quantize_with_llama_cpp, run_cli  # noqa: E402

LLAMA = os.path.join(ROOT, "examples", "llama.ss")
TYPES = ["q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0"]
STEPS = 12


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{name: (checkpoint, --dim flags, the converter's f32 .gguf)}: the trained story
    model, and a 256-wide Llama (random weights) with a trained tokenizer."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "tiny_story"))
    import train as story
    from gguf_support import hf_llama
    from test_gguf_tokenizer import V, train
    root = tmp_path_factory.mktemp("quantized")
    out, jobs = {}, []
    _, fast = story.train(str(root / "story"))
    out["story"] = (str(root / "story"), story.dim_flags(len(fast)))
    hf_llama(seed=5, V=V).save_pretrained(str(root / "wide"))
    train(str(root / "wide"))
    out["wide"] = (str(root / "wide"), ["--dim", f"V={V}", "--dim", "D=256", "--dim", "H=4", "--dim", "Hkv=2",
                                        "--dim", "F=512", "--dim", "L=2"])
    for name, (ckpt, _) in out.items():
        jobs.append((ckpt, "f32", str(root / f"{name}-converter-f32.gguf")))
    convert_hf_to_gguf(jobs)
    return {k: (c, dims, str(root / f"{k}-converter-f32.gguf")) for k, (c, dims) in out.items()}


def _tensors(path: str) -> dict:
    return {t.name: (t.tensor_type.name, np.asarray(t.data).view(np.uint8).tobytes())
            for t in gguf.GGUFReader(path).tensors}


def _greedy(path: str, prompt: list) -> list:
    from gguf_support import llama_cpp_model
    llm = llama_cpp_model(path, n_ctx=64)
    try:
        llm.eval(prompt)
        out = []
        for _ in range(STEPS):
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            out.append(tok)
            llm.eval([tok])
        return out
    finally:
        llm.close()


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("model", ["story", "wide"])
def test_a_quantized_export_is_llama_cpps_own_quantization(models, model, dtype, tmp_path):
    ckpt, dims, converted = models[model]
    ours = str(tmp_path / f"{model}-{dtype}.gguf")
    r = run_cli("export", LLAMA, "--gguf", "-o", ours, "--weights", ckpt, "--dtype", dtype.upper(), "--force", *dims)
    assert r.returncode == 0, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert f", {dtype}, " in said and "; f32: " in said if dtype != "q8_0" else f", {dtype}, " in said, said
    theirs = quantize_with_llama_cpp(converted, str(tmp_path / f"ref-{dtype}.gguf"), "MOSTLY_" + dtype.upper())
    a, b = _tensors(ours), _tensors(theirs)
    assert set(a) == set(b)
    for name in sorted(a):
        assert a[name][0] == b[name][0], f"{name}: {a[name][0]} here, {b[name][0]} from llama.cpp"
        assert a[name][1] == b[name][1], f"{name}: other bytes than llama.cpp's {b[name][0]}"
    kinds = {k for k, _ in a.values()}
    if model == "wide" and dtype != "q8_0":  # the recipe's types, really used
        assert kinds & {"Q4_K", "Q5_K", "Q6_K", "Q4_0"}, kinds
    assert gguf.GGUFReader(ours).get_field("general.file_type").contents() == \
        int(getattr(gguf.LlamaFileType, "MOSTLY_" + dtype.upper()))
    prompt = [5, 17, 33, 8, 2, 40, 11]
    assert _greedy(ours, prompt) == _greedy(theirs, prompt)


def test_the_story_model_quantized_still_tells_the_story(models, tmp_path):
    """q8_0 keeps the trained model's greedy text; q4_k_m's size beside f32's."""
    ckpt, dims, _ = models["story"]
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(ckpt)
    prompt = tok.encode("Once upon a time", add_special_tokens=False)
    files = {}
    for dtype in ("f32", "q8_0", "q4_k_m"):
        files[dtype] = str(tmp_path / f"story-{dtype}.gguf")
        r = run_cli("export", LLAMA, "--gguf", "-o", files[dtype], "--weights", ckpt, "--dtype", dtype, "--force",
                    *dims)
        assert r.returncode == 0, r.stdout + r.stderr
    assert _greedy(files["q8_0"], prompt) == _greedy(files["f32"], prompt)
    assert os.path.getsize(files["q4_k_m"]) < os.path.getsize(files["q8_0"]) < os.path.getsize(files["f32"])


def test_without_llama_cpp_one_message_names_what_to_install(tmp_path):
    """llama_cpp made unimportable: q4_k_m is refused before anything is written; q8_0,
    which the writer quantizes itself, still exports."""
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from shapescript_core.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    args = [LLAMA, "--gguf", "--random-weights", "--force", "--dim", "V=64", "--dim", "D=64", "--dim", "H=2",
            "--dim", "Hkv=1", "--dim", "F=64", "--dim", "L=1"]
    r = subprocess.run([sys.executable, "-c", code, "export", *args, "-o", str(tmp_path / "q4.gguf"),
                        "--dtype", "q4_k_m"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode != 0
    lines = [x for x in (r.stdout + r.stderr).splitlines() if "llama-cpp-python" in x]
    assert len(lines) == 1 and "--dtype q4_k_m is written by llama.cpp's own quantizer, which isn't installed" in \
        lines[0] and "pip install llama-cpp-python" in lines[0], r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert not os.listdir(tmp_path)
    r = subprocess.run([sys.executable, "-c", code, "export", *args, "-o", str(tmp_path / "q8.gguf"),
                        "--dtype", "q8_0"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and os.path.isfile(tmp_path / "q8.gguf"), r.stdout + r.stderr


def test_hf_from_a_quantized_gguf_dequantizes_and_says_so(models, tmp_path):
    ckpt, dims, _ = models["wide"]
    q = str(tmp_path / "wide-q4_0.gguf")
    assert run_cli("export", LLAMA, "--gguf", "-o", q, "--weights", ckpt, "--dtype", "q4_0", *dims).returncode == 0
    r = run_cli("export", LLAMA, "--hf", "-o", str(tmp_path / "hf"), "--weights", q, *dims)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("16 of the checkpoint's tensors are quantized (15 Q4_0, 1 Q6_K): dequantized to float32, so the export "
            "holds the file's values, not the original model's") in r.stdout + r.stderr, r.stdout + r.stderr


# ---------------------------------------------------------------- --dtype keep
@pytest.mark.parametrize("dtype", ["q4_0", "q4_k_m"])
def test_keep_copies_a_quantized_gguf_block_for_block(models, dtype, tmp_path):
    """A .gguf as llama.cpp's quantizer writes it, in and out through examples/llama.ss:
    every tensor of the same type with the same bytes (the Q/K rows permuted into the
    source's rotary layout and back: whole rows, whole blocks), the same file type, the
    same greedy text."""
    ckpt, dims, converted = models["wide"]
    src = quantize_with_llama_cpp(converted, str(tmp_path / f"in-{dtype}.gguf"), "MOSTLY_" + dtype.upper())
    out = str(tmp_path / f"kept-{dtype}.gguf")
    r = run_cli("export", LLAMA, "--gguf", "-o", out, "--weights", src, "--dtype", "keep", "--force", *dims)
    said = r.stdout + r.stderr
    assert r.returncode == 0, said
    a, b = _tensors(src), _tensors(out)
    assert set(a) == set(b)
    for name in sorted(a):
        assert b[name] == a[name], f"{name}: {b[name][0]} written, {a[name][0]} read"
    assert f"kept {len(a)} tensors as they came (" in said and "computed" not in said, said
    assert "dequantized" not in said, said
    field = "general.file_type"
    assert gguf.GGUFReader(out).get_field(field).contents() == gguf.GGUFReader(src).get_field(field).contents()
    prompt = [5, 17, 33, 8, 2, 40, 11]
    assert _greedy(out, prompt) == _greedy(src, prompt)


def test_keep_computes_what_it_must_and_says_so(models, tmp_path):
    """A source whose keys and values are one fused param (and gate and up another):
    attn_k/attn_v and ffn_gate/ffn_up are cut from params the import joined, so they are
    computed, and written at Q8_0 (the nearest type written exactly); the rest is kept."""
    from gguf_support import llama_cpp_logits
    ckpt, dims, converted = models["wide"]
    src = quantize_with_llama_cpp(converted, str(tmp_path / "in-q4_0.gguf"), "MOSTLY_Q4_0")
    out = str(tmp_path / "fused-kept.gguf")
    fused = os.path.join(ROOT, "tests", "programs", "gguf", "llama_fused.ss")
    r = run_cli("export", fused, "--gguf", "-o", out, "--weights", src, "--dtype", "keep", "--force", *dims[:2])
    said = r.stdout + r.stderr
    assert r.returncode == 0, said
    a, b = _tensors(src), _tensors(out)
    cut = {n for n in a if any(f".{k}." in n for k in ("attn_k", "attn_v", "ffn_gate", "ffn_up"))}
    assert len(cut) == 8
    assert {n: b[n][0] for n in cut} == {n: "Q8_0" for n in cut}
    assert all(b[n] == a[n] for n in a if n not in cut)
    assert "computed 8, written at the nearest type this writer writes exactly: blk.0.attn_k.weight (Q8_0)" in said
    prompt = [5, 17, 33, 8, 2, 40, 11]
    requantized = float(np.abs(llama_cpp_logits(out, prompt) - llama_cpp_logits(src, prompt)).max())
    quantized = float(np.abs(llama_cpp_logits(src, prompt) - llama_cpp_logits(converted, prompt)).max())
    print(f"q4_0 against f32: {quantized:.3f}; the 8 tensors at Q8_0 against q4_0: {requantized:.3f}")
    assert requantized < quantized / 4  # Q8_0's rounding of Q4_0's values, small beside Q4_0's own


def test_keep_needs_a_gguf_in(tmp_path):
    r = run_cli("export", LLAMA, "--gguf", "-o", str(tmp_path / "k.gguf"), "--random-weights", "--dtype", "keep",
                "--dim", "V=64", "--dim", "D=64", "--dim", "H=2", "--dim", "Hkv=1", "--dim", "F=64", "--dim", "L=1")
    assert r.returncode == 2  # a usage error, said before the check
    assert "--dtype keep keeps a .gguf's tensors as they came: give --weights FILE.gguf" in r.stdout + r.stderr
    assert not os.listdir(tmp_path)
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    r = run_cli("export", LLAMA, "--gguf", "-o", str(tmp_path / "k.gguf"), "--weights", str(folder), "--dtype", "keep")
    assert r.returncode == 2 and "give --weights FILE.gguf" in r.stderr and os.listdir(tmp_path) == ["checkpoint"]
    r = run_cli("export", LLAMA, "--hf", "-o", str(tmp_path / "k"), "--random-weights", "--dtype", "keep")
    assert r.returncode != 0 and "--dtype keep is for gguf only" in r.stdout + r.stderr
