"""The GGUF writer's pieces on their own: row layouts against torch's rotary embedding,
fused-projection gathers, stored types, and a tokenizer that can't be embedded (a clear
message, exit 1, nothing written)."""
import os

import pytest

np = pytest.importorskip("numpy")

from gguf_support import CONFORMANCE, LLAMA_DIMS, run_cli
from shapescript_core.arch import layout
from shapescript_core.arch.plan import Gather, TensorPlan


def _rope(x, pos, theta, style):
    """x: [n, Dh] rotated by positions, in the two styles."""
    n, dh = x.shape
    inv = theta ** (-np.arange(0, dh, 2) / dh)
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if style == "half":
        a, b = x[:, :dh // 2], x[:, dh // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=1)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = a * cos - b * sin, b * cos + a * sin
    return out


def test_the_permutation_turns_half_rope_into_interleaved_rope():
    # q.k after rotate-half rope on W's rows == after interleaved rope on the permuted rows
    rng = np.random.default_rng(0)
    heads, dh, d, n = 2, 8, 16, 5
    wq, wk = rng.normal(size=(heads * dh, d)), rng.normal(size=(heads * dh, d))
    x, pos = rng.normal(size=(n, d)), np.arange(n, dtype=np.float64)
    pq, pk = layout.rope_permute(wq, heads, "interleaved"), layout.rope_permute(wk, heads, "interleaved")
    for h in range(heads):
        s = slice(h * dh, (h + 1) * dh)
        half = _rope(x @ wq[s].T, pos, 10000.0, "half") @ _rope(x @ wk[s].T, pos, 10000.0, "half").T
        inter = _rope(x @ pq[s].T, pos, 10000.0, "interleaved") @ _rope(x @ pk[s].T, pos, 10000.0, "interleaved").T
        assert np.allclose(half, inter)
    assert not np.allclose(pq, wq)
    assert np.array_equal(layout.rope_permute(pq, heads, "half"), wq)  # and back (qwen2's direction)


def test_gather_cuts_a_fused_projection_in_any_factor_order():
    rng = np.random.default_rng(1)
    H, Dh, D = 3, 4, 5
    q, k, v = (rng.normal(size=(H * Dh, D)) for _ in range(3))
    # rows (3 Dh H): each part's rows transposed to head width first
    fused = np.concatenate([p.reshape(H, Dh, D).transpose(1, 0, 2).reshape(H * Dh, D) for p in (q, k, v)])
    for i, want in enumerate((q, k, v)):
        got = layout.apply(fused, (Gather(0, (3, Dh, H), (0, i), (1, 0)),))
        assert np.array_equal(got, want)
    bias = np.arange(3 * H * Dh, dtype=np.float32)
    assert layout.apply(bias, (Gather(0, (3, H * Dh), (0, 2)),)).tolist() == list(range(2 * H * Dh, 3 * H * Dh))


def test_stored_types():
    from gguf import GGMLQuantizationType as Q

    from shapescript_core.export.gguf.writer import stored_type
    m = TensorPlan("attn_q", 0, "weight", "w", (64, 64))
    norm = TensorPlan("attn_norm", 0, "weight", "n", (64,), kind="vector")
    odd = TensorPlan("ffn_down", 0, "weight", "d", (64, 40))
    assert stored_type(m, (64, 64), "q8_0")[0] == Q.Q8_0
    assert stored_type(m, (64, 64), "bf16")[0] == Q.BF16
    assert stored_type(m, (64, 64), "f16")[0] == Q.F16
    assert stored_type(norm, (64,), "q8_0")[0] == Q.F32  # norms and biases stay f32
    assert stored_type(odd, (64, 40), "q8_0")[0] == Q.F16  # rows of 40 can't be cut into blocks of 32


@pytest.mark.parametrize("tokenizer_json,words", [
    ('{"model": {"type": "WordPiece", "vocab": {}}}', "only BPE vocabularies can be embedded"),
    ('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": '
     '{"type": "ByteLevel", "add_prefix_space": true}}', "adds a prefix space"),
    ('{"model": {"type": "BPE", "vocab": {"a": 999}, "merges": ["a a"]}, "pre_tokenizer": '
     '{"type": "ByteLevel", "add_prefix_space": false}}', "token id 999"),
    ('not json', "is not valid JSON"),
])
def test_a_tokenizer_that_cant_be_embedded_is_a_clear_error(tmp_path, tokenizer_json, words):
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    out = tmp_path / "out" / "m.gguf"
    out.parent.mkdir()
    args = ["export", os.path.join(CONFORMANCE, "llama.ss"), "--gguf", "-o", out, "--random-weights",
            "--tokenizer", tok]
    for k, v in LLAMA_DIMS.items():
        args += ["--dim", f"{k}={v}"]
    r = run_cli(*args)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "can't embed the tokenizer" in r.stderr + r.stdout and words in r.stderr + r.stdout
    assert "Traceback" not in r.stderr
    assert os.listdir(out.parent) == []


def _export_in_process(tmp_path, cancel_after=None):
    from shapescript_core.export.request import make_request
    from shapescript_core.export.run import run_export
    from shapescript_core.workspace import Workspace
    out = tmp_path / "m.gguf"
    req = make_request(os.path.join(CONFORMANCE, "llama.ss"), "gguf", output=str(out), random_weights=True,
                       dims=dict(LLAMA_DIMS))
    seen = []

    def progress(message, done, total):
        seen.append((message, done, total))

    def cancelled():
        return cancel_after is not None and sum("writing" in m for m, _, _ in seen) >= cancel_after
    return run_export(Workspace(), req, progress, cancelled), seen, out


def test_progress_moves_per_tensor(tmp_path):
    res, seen, out = _export_in_process(tmp_path)
    assert res.ok and out.is_file(), res.message
    writing = [(m, d, t) for m, d, t in seen if m.startswith("writing m.gguf: ")]
    assert [m.split(": ")[1] for m, _, _ in writing][:3] == ["token_embd.weight", "blk.0.attn_norm.weight",
                                                             "blk.0.attn_q.weight"]
    assert len(writing) == 21
    done = [d for _, d, _ in writing]
    assert done == sorted(done) and done[0] == 0 and len(set(t for _, _, t in writing)) == 1
    assert seen[-1][1] == seen[-1][2]  # ends at 100%


def test_a_cancel_mid_write_leaves_nothing(tmp_path):
    res, seen, out = _export_in_process(tmp_path, cancel_after=5)
    assert not res.ok and "cancelled" in res.message
    assert sum("writing" in m for m, _, _ in seen) == 5
    assert os.listdir(tmp_path) == []
