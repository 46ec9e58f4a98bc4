"""Weights: dtype conversion exact against torch, random init deterministic per (seed,
path), safetensors headers read and checked by hand (truncated, corrupt), sharded and
directory sources, and the streaming writer read back by `safetensors.safe_open`."""
from __future__ import annotations

import json
import os
import struct

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
safe_open = pytest.importorskip("safetensors").safe_open
save_file = pytest.importorskip("safetensors.numpy").save_file

from shapescript_core.export_errors import ExportError, ParamSpec
from shapescript_core.weights.convert import bf16_bits, bf16_to_f32, to_stored
from shapescript_core.weights.random_init import random_tensor
from shapescript_core.weights.safetensors_format import build_header, read_header
from shapescript_core.weights.source import WeightSource


def _specials() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * 3,
        rng.standard_normal(2000).astype(np.float32) * 1e-39,          # subnormals
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 1e5, -1e38, 3.4e38,
                  1.00390625, 1.01171875, 1.0078125, 1.0 + 2 ** -9, 1.0 + 3 * 2 ** -9], np.float32),
    ])
    # exact ties for bf16: the lower 16 bits are 0x8000
    ties = (rng.integers(0, 2 ** 16, 500, dtype=np.uint32) << 16 | 0x8000).astype(np.uint32).view(np.float32)
    return np.concatenate([x, ties[np.isfinite(ties)]])


def test_bf16_bits_equal_torch():
    x = _specials()
    want = torch.tensor(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    got = bf16_bits(x)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(bf16_to_f32(got[nan])).all()


def test_f16_equals_torch():
    x = _specials()
    want = torch.tensor(x).to(torch.float16).numpy()
    got = to_stored(x, "f16")
    nan = np.isnan(x)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def test_bf16_round_trip_keeps_bf16_values():
    x = bf16_to_f32(bf16_bits(_specials()))
    finite = np.isfinite(x)
    assert np.array_equal(bf16_to_f32(bf16_bits(x))[finite], x[finite])


def _spec(path="layers.0.w", shape=(64, 32), init=("normal", 0.02), dtype="f32"):
    return ParamSpec(path, path.rsplit(".", 1)[-1], "M", shape, dtype, init)


def test_random_weights_deterministic_per_seed_and_path():
    a = random_tensor(_spec(), 0)
    assert a.dtype == np.float32 and a.shape == (64, 32)
    assert np.array_equal(a, random_tensor(_spec(), 0))          # same (seed, path): same values
    assert not np.array_equal(a, random_tensor(_spec(), 1))      # another seed
    assert not np.array_equal(a, random_tensor(_spec("layers.1.w"), 0))  # another path
    assert abs(float(a.std()) - 0.02) < 0.002 and abs(float(a.mean())) < 0.002
    big = random_tensor(_spec(shape=(200, 200), init=("normal", 0.5)), 3)
    assert abs(float(big.std()) - 0.5) < 0.01
    assert np.array_equal(random_tensor(_spec(init=("ones",)), 0), np.ones((64, 32), np.float32))
    assert np.array_equal(random_tensor(_spec(init=("zeros",)), 0), np.zeros((64, 32), np.float32))
    h = random_tensor(_spec(dtype="f16"), 0)
    assert h.dtype == np.float16 and np.array_equal(h, a.astype(np.float16))
    b = random_tensor(_spec(dtype="bf16"), 0)
    assert np.array_equal(bf16_bits(b), bf16_bits(a))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_random_weights_in_pieces_join_to_the_whole(dtype):
    from shapescript_core.weights.random_init import random_chunks
    spec = _spec(shape=(301, 77), dtype=dtype)
    whole = random_tensor(spec, 11).reshape(-1)
    for n in (12345, 4096, 301 * 77):
        assert np.array_equal(np.concatenate(list(random_chunks(spec, 11, n))), whole)
    ones = _spec(init=("ones",), dtype=dtype)
    assert np.array_equal(np.concatenate(list(random_chunks(ones, 0, 100))), random_tensor(ones, 0).reshape(-1))


def test_an_unknown_initializer_is_a_clear_error():
    with pytest.raises(ExportError, match=r"`layers.0.w`'s initializer `uniform\(1\)` can't make random weights"):
        random_tensor(_spec(init=("unknown", "uniform(1)")), 0)


def _save(tmp_path, name="w.safetensors", **tensors):
    p = str(tmp_path / name)
    save_file({k: v for k, v in tensors.items()}, p)
    return p


def test_header_lists_tensors_in_file_order(tmp_path):
    p = _save(tmp_path, a=np.ones((3, 4), np.float32), b=np.zeros((5,), np.int64))
    h = read_header(p)
    assert {k: (t.dtype, t.shape) for k, t in h.tensors.items()} == {"a": ("f32", (3, 4)), "b": ("i64", (5,))}
    assert h.truncated == {}
    assert h.tensors["a"].nbytes == 48


def test_truncated_file_names_the_tensor_it_cuts(tmp_path):
    p = _save(tmp_path, a=np.ones((3, 4), np.float32), b=np.ones((100,), np.float32))
    size = os.path.getsize(p)
    with open(p, "r+b") as fh:
        fh.truncate(size - 10)
    h = read_header(p)
    last = max(h.tensors.values(), key=lambda t: t.start).key
    assert list(h.truncated) == [last]
    assert "truncated" in h.truncated[last]


@pytest.mark.parametrize("damage, message", [
    (lambda raw: raw[:4], "shorter than a header"),
    (lambda raw: struct.pack("<Q", 10 ** 9) + raw[8:], "the header length its first 8 bytes give does not fit the file"),
    (lambda raw: raw[:8] + b"[" + raw[9:], "its header is not JSON"),
    (lambda raw: raw[:8] + raw[8:].replace(b'"F32"', b'"F33"'), "dtype `F33` is not a safetensors dtype"),
])
def test_corrupt_header_is_a_clear_error(tmp_path, damage, message):
    p = _save(tmp_path, a=np.ones((3, 4), np.float32))
    raw = open(p, "rb").read()
    with open(p, "wb") as fh:
        fh.write(damage(raw))
    with pytest.raises(ExportError) as e:
        read_header(p)
    assert "w.safetensors" in e.value.message and message in e.value.message


def test_source_reads_a_directory_and_a_sharded_index(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(5, dtype=np.int64)
    d1 = tmp_path / "single"
    d1.mkdir()
    _save(d1, "model.safetensors", a=a, b=b)
    src = WeightSource(str(d1))
    assert sorted(src.keys()) == ["a", "b"] and np.array_equal(src.read("a"), a)

    d2 = tmp_path / "sharded"
    d2.mkdir()
    _save(d2, "model-00001-of-00002.safetensors", a=a)
    _save(d2, "model-00002-of-00002.safetensors", b=b)
    index = {"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                            "b": "model-00002-of-00002.safetensors"}}
    (d2 / "model.safetensors.index.json").write_text(json.dumps(index))
    for where in (str(d2), str(d2 / "model.safetensors.index.json")):
        src = WeightSource(where)
        assert sorted(src.keys()) == ["a", "b"]
        assert np.array_equal(src.read("b"), b) and src.describe() == "the 2 shards of " + \
            f"`{os.path.basename(where)}`"
    index["weight_map"]["c"] = "model-00003-of-00002.safetensors"
    (d2 / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ExportError, match=r"can't read `c` from model.safetensors.index.json: its shard "
                                          r"`model-00003-of-00002.safetensors` does not exist"):
        WeightSource(str(d2))
    with pytest.raises(ExportError, match="has neither model.safetensors nor"):
        WeightSource(str(tmp_path))


def test_bf16_weights_read_as_float32(tmp_path):
    x = torch.randn(4, 8).to(torch.bfloat16)
    from safetensors.torch import save_file as save_pt
    p = str(tmp_path / "bf.safetensors")
    save_pt({"w": x}, p)
    src = WeightSource(p)
    assert src.info("w").dtype == "bf16"
    assert np.array_equal(src.read("w"), x.float().numpy())


def test_streamed_header_is_what_safetensors_reads(tmp_path):
    entries = [("x", "F32", (3, 5)), ("y.z", "BF16", (7,)), ("i", "I64", (2, 2))]
    header, layout = build_header(entries)
    assert len(header) % 8 == 0
    data = {"x": np.arange(15, dtype=np.float32).reshape(3, 5), "y.z": bf16_bits(np.linspace(-1, 1, 7)),
            "i": np.arange(4, dtype=np.int64).reshape(2, 2)}
    p = tmp_path / "s.safetensors"
    with open(p, "wb") as fh:
        fh.write(header)
        for key, start, end in layout:
            assert fh.tell() == start
            fh.write(data[key].tobytes())
    with safe_open(str(p), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert list(f.keys()) == ["i", "x", "y.z"]
        assert torch.equal(f.get_tensor("x"), torch.tensor(data["x"]))
        assert torch.equal(f.get_tensor("y.z"), torch.tensor(np.linspace(-1, 1, 7), dtype=torch.float32)
                           .to(torch.bfloat16))
        assert f.get_tensor("i").dtype == torch.int64


@pytest.mark.parametrize("block", [1 << 24, 3 * 16, 16])  # the whole tensor in one block; 3 rows; one row
def test_rows_copied_in_another_order_are_the_arrays_rows(tmp_path, monkeypatch, block):
    """copy_rows_into (the Q/K rotary permutation, a slice of a stacked tensor, written
    without an array) gives the bytes numpy's row indexing gives, across blocks."""
    from shapescript_core.arch.layout import rope_permute
    from shapescript_core.weights import row_copy
    monkeypatch.setattr(row_copy, "BLOCK", block)
    w = np.arange(8 * 4, dtype=np.float32).reshape(8, 4) * 1.5
    b = np.arange(8, dtype=np.float32) - 3
    p = _save(tmp_path, pad=np.ones(3, np.float32), w=w, b=b)
    src = WeightSource(p)
    perm = rope_permute(np.arange(8), 2, "interleaved")
    for key, arr, order in (("w", w, perm), ("w", w, [5, 6, 7]), ("w", w, [7, 0, 1, 2, 6]),
                            ("w", w, list(range(8))), ("b", b, perm)):
        out = tmp_path / "out.bin"
        with open(out, "wb") as fh:
            n = src.copy_rows_into(key, fh, order)
        assert n == len(order) * arr[0].nbytes
        assert out.read_bytes() == np.ascontiguousarray(arr[np.asarray(order)]).tobytes()


def test_a_row_copy_of_a_truncated_tensor_names_it(tmp_path):
    p = _save(tmp_path, w=np.ones((8, 4), np.float32))
    with open(p, "r+b") as fh:
        fh.truncate(os.path.getsize(p) - 20)
    src = WeightSource(p)
    with open(tmp_path / "out.bin", "wb") as fh, pytest.raises(ExportError) as e:
        src.copy_rows_into("w", fh, [7, 6, 5, 4, 3, 2, 1, 0])
    assert e.value.message == "can't read `w` from w.safetensors: the file ends inside it (truncated)"

