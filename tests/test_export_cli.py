"""`shapescript export` end to end on the backbone: the request, the weights checks
(each bad-weights case: message, exit status, no output), the atomic output (Ctrl-C,
an exception, a full disk, a killed export), random weights, and `--dim` names.

The writer here is a tiny one defined in this module (registered in-process with
monkeypatch, or by the subprocess wrapper below): the real writers' own tests load
their output in transformers / llama.cpp; these check what every writer shares.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

np = pytest.importorskip("numpy")
safe_open = pytest.importorskip("safetensors").safe_open
save_file = pytest.importorskip("safetensors.numpy").save_file

from shapescript_core.cli import main
from shapescript_core.export import writers
from shapescript_core.export.atomic import MARK
from shapescript_core.export.output import MARKER

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SOURCE = """\
dim V = 64
dim D = 32
dim H = 2
dim Dh = D / H
dim F = 48
dim L = 2

model Attn:
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wo: [D D]

model Block:
    norm: [D] = ones
    attn: Attn
    w_up: [F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    out_norm: [D] = ones
    lm_head: [V D]

fn attend(a: Attn, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    k = linear(x, a.wk) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    v = linear(x, a.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

@export(hf, vllm)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = x + attend(layer.attn, rms_norm(x, layer.norm, over=D, eps=1e-5), pos)
        x = x + linear(silu(linear(x, layer.w_up)), layer.w_down)
    return rms_norm(x, m.out_norm, over=D, eps=1e-5) |> linear(m.lm_head)
"""

PATHS = ["embed"] + [f"layers.{i}.{f}" for i in range(2) for f in
                     ("norm", "attn.wq", "attn.wk", "attn.wv", "attn.wo", "w_up", "w_down")] + ["out_norm", "lm_head"]

# ---- the tiny writer: config.json and model.safetensors with every param
HOOK = {"fail_at": None, "exc": None}


def tiny_write(ctx):
    with open(os.path.join(ctx.tmp, "config.json"), "w") as fh:
        json.dump({"dims": ctx.dims, "params": [s.path for s in ctx.params]}, fh)
    delay = float(os.environ.get("SS_TINY_DELAY", "0"))
    seen = []

    def hook(x):
        seen.append(1)
        if HOOK["fail_at"] is not None and len(seen) == HOOK["fail_at"]:
            raise HOOK["exc"]
        if delay:
            time.sleep(delay)
        return x

    hooked = HOOK["fail_at"] is not None or delay
    entries = [(s.path, s.path, hook) if hooked else (s.path, s.path) for s in ctx.params]
    n = ctx.write_safetensors("model.safetensors", entries)
    return f"wrote {ctx.request.output} (hf: {len(entries)} tensors, {n} bytes)"


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(writers.WRITERS, "hf", f"{__name__}:tiny_write")
    monkeypatch.setitem(HOOK, "fail_at", None)
    monkeypatch.setitem(HOOK, "exc", None)


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "lm.ss"
    p.write_text(SOURCE)
    return p


def export(capsys, *args):
    """(exit status, what it printed: diagnostics on stdout, messages on stderr)."""
    code = main(["export", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def leftovers(folder) -> list:
    return [n for n in os.listdir(folder) if MARK in n]


def tensors(path) -> dict:
    with safe_open(str(path), framework="numpy") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def good_weights(tmp_path, name="w.safetensors", **changes) -> str:
    rng = np.random.default_rng(0)
    shapes = {"embed": (64, 32), "out_norm": (32,), "lm_head": (64, 32)}
    for i in range(2):
        shapes.update({f"layers.{i}.norm": (32,), f"layers.{i}.w_up": (48, 32), f"layers.{i}.w_down": (32, 48)})
        shapes.update({f"layers.{i}.attn.{w}": (32, 32) for w in ("wq", "wk", "wv", "wo")})
    t = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    for k, v in changes.items():
        k = k.replace("__", ".")
        if v is None:
            t.pop(k)
        else:
            t[k] = v
    p = str(tmp_path / name)
    save_file(t, p)
    return p


# ---- what gets written
def test_random_export_writes_every_param_in_order(tiny, src, tmp_path, capsys):
    code, err = export(capsys, src, "--hf", "-o", tmp_path / "out")
    assert code == 0, err
    assert "no weights were named" in err and "random weights (seed 0)" in err
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == [MARKER, "config.json", "model.safetensors"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["dims"] == {"V": 64, "D": 32, "H": 2, "Dh": 16, "F": 48, "L": 2}
    assert cfg["params"] == PATHS
    t = tensors(out / "model.safetensors")
    assert sorted(t) == sorted(PATHS)
    assert np.array_equal(t["layers.1.norm"], np.ones(32, np.float32))
    assert abs(float(t["embed"].std()) - 0.02) < 0.005
    assert leftovers(tmp_path) == []


def test_random_weights_are_deterministic_per_seed(tiny, src, tmp_path, capsys):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert export(capsys, src, "--hf", "--random-weights", "--seed", seed, "-o", tmp_path / name)[0] == 0
    a, b, c = (open(tmp_path / n / "model.safetensors", "rb").read() for n in "abc")
    assert a == b and a != c


def test_weights_round_trip_and_dtypes_exact_against_torch(tiny, src, tmp_path, capsys):
    import torch  # here, not at the top: the subprocess exports import this module for its writer
    w = good_weights(tmp_path)
    assert export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "f32")[0] == 0
    src_t, out = tensors(w), tensors(tmp_path / "f32" / "model.safetensors")
    assert all(np.array_equal(src_t[k], out[k]) for k in PATHS)
    # re-export from the written checkpoint: identical
    assert export(capsys, src, "--hf", "--weights", tmp_path / "f32", "-o", tmp_path / "again")[0] == 0
    assert open(tmp_path / "again" / "model.safetensors", "rb").read() == \
        open(tmp_path / "f32" / "model.safetensors", "rb").read()
    for dt, torch_dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        assert export(capsys, src, "--hf", "--weights", w, "--dtype", dt, "-o", tmp_path / dt)[0] == 0
        with safe_open(str(tmp_path / dt / "model.safetensors"), framework="pt") as f:
            for k in PATHS:
                assert torch.equal(f.get_tensor(k), torch.tensor(src_t[k]).to(torch_dt)), k


# ---- each bad-weights case: the message, the exit status, no output
def _refused(tmp_path, code, err, status=1):
    assert code == status, err
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path) == []


def test_missing_key_is_e3310_at_the_field(tiny, src, tmp_path, capsys):
    w = good_weights(tmp_path, layers__1__attn__wq=None)
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    assert "error[E3310]: the weights have no `layers.1.attn.wq`" in err
    assert "lm.ss:9:5" in err  # `wq: [D D]` in model Attn
    assert "not exported: 1 param can't be read from the weights" in err


def test_wrong_shape_is_e3311_with_both_shapes_and_the_dims(tiny, src, tmp_path, capsys):
    w = good_weights(tmp_path, embed=np.zeros((60, 32), np.float32))
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    assert "error[E3311]: `embed` is [60 32] in the weights, but the model says [V D] = [64 32]" in err
    assert "lm.ss:21:5" in err


def test_dim_without_value_is_e3312(tiny, src, tmp_path, capsys):
    src.write_text(SOURCE.replace("dim F = 48", "dim F"))
    code, err = export(capsys, src, "--hf", "--random-weights", "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    assert "error[E3312]: `F` has no value" in err and "lm.ss:5:5" in err
    assert "not exported: 1 dim has no value" in err
    assert export(capsys, src, "--hf", "--random-weights", "--dim", "F=40", "-o", tmp_path / "out")[0] == 0


def test_wrong_dtype_names_the_tensor(tiny, src, tmp_path, capsys):
    w = good_weights(tmp_path, lm_head=np.zeros((64, 32), np.float16))
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    assert "`lm_head` is f16 in the weights, but the model says f32" in err


def test_extra_key_is_a_warning_and_the_export_goes_on(tiny, src, tmp_path, capsys):
    w = good_weights(tmp_path, rotary_cache=np.zeros(4, np.float32))
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    assert code == 0, err
    assert "warning: the weights' `rotary_cache` is no param of `Lm`: it is left out" in err
    assert "rotary_cache" not in tensors(tmp_path / "out" / "model.safetensors")


def test_truncated_file_names_the_tensor(tiny, src, tmp_path, capsys):
    w = good_weights(tmp_path)
    with open(w, "r+b") as fh:
        fh.truncate(os.path.getsize(w) - 100)
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    last = max(tensors_header(w), key=lambda kv: kv[1])[0]
    assert f"can't read `{last}` from w.safetensors: the file ends" in err and "truncated" in err


def tensors_header(path):
    from shapescript_core.weights.safetensors_format import read_header
    return [(k, t.start) for k, t in read_header(path).tensors.items()]


def test_corrupt_header_is_a_clear_message(tiny, src, tmp_path, capsys):
    w = tmp_path / "w.safetensors"
    w.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / "out")
    _refused(tmp_path, code, err)
    assert "w.safetensors is not a safetensors file that can be read: its header is not JSON" in err
    assert "Traceback" not in err


def test_sharded_index_and_directory_inputs(tiny, src, tmp_path, capsys):
    full = tensors(good_weights(tmp_path))
    shard_dir = tmp_path / "sharded"
    shard_dir.mkdir()
    names = sorted(full)
    half = len(names) // 2
    save_file({k: full[k] for k in names[:half]}, str(shard_dir / "model-00001-of-00002.safetensors"))
    save_file({k: full[k] for k in names[half:]}, str(shard_dir / "model-00002-of-00002.safetensors"))
    wm = {k: f"model-0000{1 if i < half else 2}-of-00002.safetensors" for i, k in enumerate(names)}
    (shard_dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wm}))
    for n, w in enumerate((shard_dir, shard_dir / "model.safetensors.index.json")):
        code, err = export(capsys, src, "--hf", "--weights", w, "-o", tmp_path / f"out{n}")
        assert code == 0, err
        got = tensors(tmp_path / f"out{n}" / "model.safetensors")
        assert all(np.array_equal(got[k], full[k]) for k in names)
    one = tmp_path / "one"
    one.mkdir()
    save_file(full, str(one / "model.safetensors"))
    assert export(capsys, src, "--hf", "--weights", one, "-o", tmp_path / "out3")[0] == 0


# ---- atomic output
def test_existing_output_needs_force_and_force_replaces_only_an_earlier_export(tiny, src, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, err = export(capsys, src, "--hf", "-o", out)
    assert code == 2 and "exists: pass --force to replace it" in err
    assert os.listdir(out) == ["keep.txt"]
    code, err = export(capsys, src, "--hf", "-o", out, "--force")  # not an export of ours
    assert code == 1 and f"--force won't replace `{out}`: it is not an earlier export" in err
    assert os.listdir(out) == ["keep.txt"]
    (out / "keep.txt").unlink()
    out.rmdir()
    assert export(capsys, src, "--hf", "-o", out)[0] == 0
    (out / "extra.txt").write_text("mine")  # inside our export: replaced with it
    code, err = export(capsys, src, "--hf", "-o", out, "--force")
    assert code == 0, err
    assert sorted(os.listdir(out)) == [MARKER, "config.json", "model.safetensors"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("exc, status, says", [(KeyboardInterrupt(), 130, ""),
                                               (RuntimeError("boom"), 1, "internal error in the hf export: "
                                                                         "RuntimeError: boom")])
def test_interrupted_or_failed_write_leaves_nothing(tiny, src, tmp_path, capsys, exc, status, says, caplog):
    HOOK.update(fail_at=5, exc=exc)
    code, err = export(capsys, src, "--hf", "-o", tmp_path / "out")
    _refused(tmp_path, code, err, status)
    assert says in err
    if isinstance(exc, RuntimeError):
        assert "RuntimeError: boom" in caplog.text  # logged with its traceback
    # with --force over an earlier export, the old output stays whole
    HOOK.update(fail_at=None)
    assert export(capsys, src, "--hf", "-o", tmp_path / "out")[0] == 0
    (tmp_path / "out" / "old.txt").write_text("old")
    before = sorted(os.listdir(tmp_path / "out"))
    HOOK.update(fail_at=5, exc=exc)
    code, err = export(capsys, src, "--hf", "-o", tmp_path / "out", "--force")
    assert code == status and sorted(os.listdir(tmp_path / "out")) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("weights", [False, True], ids=["random", "copied"])
def test_full_disk_leaves_nothing(tiny, src, tmp_path, capsys, weights, monkeypatch):
    w = ["--weights", good_weights(tmp_path)] if weights else []
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("needs a small tmpfs (root): " + r.stderr.decode().strip())
    # the up-front size check would refuse (test_too_large_for_the_disk_is_refused_up_front):
    # here the disk fills during the write, as when another program writes meanwhile
    from shapescript_core.export import run as run_module
    monkeypatch.setattr(run_module, "size_problem", lambda *a, **k: None)
    try:
        code, err = export(capsys, src, "--hf", *w, "-o", mnt / "out")
        assert code == 1, err
        assert f"no space left on the device writing `{mnt / 'out'}`: nothing was written" in err
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


WRAPPER = (f"import sys; sys.path.insert(0, {HERE!r}); sys.path.insert(0, {ROOT!r}); "
           "from shapescript_core.export import writers; "
           "writers.WRITERS['hf'] = 'test_export_cli:tiny_write'; "
           "from shapescript_core.cli import main; sys.exit(main(sys.argv[1:]))")


def _start_and_signal(src, out, sig):
    """Start an export in a process of its own, and send it `sig` mid-write."""
    env = {**os.environ, "SS_TINY_DELAY": "0.2"}
    p = subprocess.Popen([sys.executable, "-c", WRAPPER, "export", str(src), "--hf", "-o", str(out)],
                         env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not leftovers(out.parent) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)  # mid-write
    p.send_signal(sig)
    p.wait()
    return p.returncode


def test_killed_export_leaves_a_temporary_the_next_export_removes(src, tmp_path):
    out = tmp_path / "out"
    assert _start_and_signal(src, out, signal.SIGKILL) == -signal.SIGKILL
    stale = leftovers(tmp_path)
    assert len(stale) == 1 and not out.exists()
    r = subprocess.run([sys.executable, "-c", WRAPPER, "export", str(src), "--hf", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert leftovers(tmp_path) == [] and sorted(os.listdir(out)) == [MARKER, "config.json", "model.safetensors"]


def test_terminated_export_cleans_up(src, tmp_path):
    out = tmp_path / "out"
    assert _start_and_signal(src, out, signal.SIGTERM) == 128 + signal.SIGTERM
    assert leftovers(tmp_path) == [] and not out.exists()


def test_a_running_exports_temporary_is_left_alone(tiny, src, tmp_path, capsys):
    alive = tmp_path / f".out{MARK}1-abcd"  # pid 1 is alive
    alive.mkdir()
    assert export(capsys, src, "--hf", "-o", tmp_path / "out")[0] == 0
    assert leftovers(tmp_path) == [alive.name]


# ---- usage errors (exit 2)
def test_unknown_dim_is_a_usage_error_naming_the_dims(tiny, src, tmp_path, capsys):
    code, err = export(capsys, src, "--hf", "--dim", "Q=4", "-o", tmp_path / "out")
    assert code == 2
    assert "--dim `Q` is no dim of lm.ss; its dims are D, Dh, F, H, L, V" in err
    code = main(["check", str(src), "--dim", "Fx=4"])
    err = capsys.readouterr().err
    assert code == 2 and "--dim `Fx` is no dim of lm.ss (did you mean `F`?); its dims are D, Dh, F, H, L, V" in err
    assert main(["check", str(src), "--dim", "F=4"]) == 0


@pytest.mark.parametrize("args, says", [
    (["--dtype", "q8_0"], "--dtype q8_0 is for gguf only"),
    (["--weights", "nowhere.safetensors"], "can't read the weights"),
    (["--weights", "x", "--random-weights"], "--weights and --random-weights exclude each other"),
    (["--tokenizer", "."], "holds no tokenizer"),
    (["--seed", "-1"], "the seed takes a non-negative integer"),
    (["--fn", "attendx"], "`attendx` isn't a function"),
    (["--gguf"], "export takes exactly one of --hf, --vllm, --gguf"),
])
def test_bad_options_are_usage_errors(tiny, src, tmp_path, capsys, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    code, err = export(capsys, src, "--hf", *args, "-o", tmp_path / "out")
    assert code == 2 and says in err, err
    assert not (tmp_path / "out").exists()


def test_without_the_writer_the_checks_run_and_it_says_so(src, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(writers.WRITERS, "hf", "shapescript_core.export.no_such_writer:write")
    code, err = export(capsys, src, "--hf", "-o", tmp_path / "out")
    assert code == 2 and "the checks pass, but the hf writer is not available yet" in err


# ---- defaults
def test_default_output_and_settings(tiny, src, tmp_path, capsys):
    assert export(capsys, src, "--hf")[0] == 0
    assert (tmp_path / "lm-hf" / "model.safetensors").exists()
    w = good_weights(tmp_path)
    (tmp_path / "shapescript.toml").write_text(
        '[export]\noutput = "exported"\nweights = "w.safetensors"\ndtype = "f16"\n[dims]\nF = 48\n')
    code, err = export(capsys, src, "--hf")
    assert code == 0, err and "random" not in err
    t = tensors(tmp_path / "exported" / "model.safetensors")
    assert t["embed"].dtype == np.float16 and np.array_equal(t["embed"], tensors(w)["embed"].astype(np.float16))


def test_help_says_what_each_flag_does(capsys):
    assert main(["export", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    from shapescript_core.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "cmd").choices["export"]
    flags = {o: a.help for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    assert sorted(flags) == sorted(["--hf", "--vllm", "--gguf", "--litert", "--fn", "--out", "--dim", "--weights",
                                    "--weights-map", "--random-weights", "--seed", "--dtype", "--force", "--tokenizer",
                                    "--prefill-length", "--cache-length", "--quantize", "--split-cache", "--tensor-parallel"])
    for flag, text in flags.items():
        assert text and len(text) > 15, flag
        assert " ".join(text.split()) in out, flag


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise(src, tmp_path):
    import pty
    env = {**os.environ, "SS_TINY_DELAY": "0.02", "TERM": "xterm", "COLUMNS": "100"}
    cmd = [sys.executable, "-c", WRAPPER, "export", str(src), "--hf", "--random-weights", "-o"]
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd + [str(tmp_path / "tty")], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait()
    os.close(master)
    shown = b"".join(chunks).decode(errors="replace")
    assert p.returncode == 0, shown
    assert "━" in shown and "model.safetensors" in shown  # rich's bar, with the tensor being written
    r = subprocess.run(cmd + [str(tmp_path / "pipe")], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "━" not in r.stderr and "\x1b[" not in r.stderr
    assert "shapescript: 100% wrote model.safetensors" in r.stderr


def test_tokenizer_ships_with_the_real_hf_export(tmp_path, capsys):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the cat sat on the mat"] * 20, trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>"]))
    tdir = tmp_path / "tok"
    tdir.mkdir()
    tok.save(str(tdir / "tokenizer.json"))
    src = os.path.join(ROOT, "examples", "llama.ss")
    dims = ["--dim", "V=64", "--dim", "D=64", "--dim", "H=2", "--dim", "Hkv=1", "--dim", "F=64", "--dim", "L=1"]
    code, err = export(capsys, src, "--hf", "--tokenizer", tdir, "-o", tmp_path / "out", *dims)
    assert code == 0, err
    loaded = AutoTokenizer.from_pretrained(str(tmp_path / "out"))
    assert loaded("the cat")["input_ids"] == tok.encode("the cat").ids
