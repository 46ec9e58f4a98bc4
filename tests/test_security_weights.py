"""Reproduction 09 of ../shared/repro/security as tests: hostile --weights get one clear
message, exit 1, nothing written; nothing is read outside the weights directory, and no
byte of a foreign file is shown."""
from __future__ import annotations

import json
import os
import struct

import pytest

from security_support import TINY, cli
from shapescript_core.cli import main

np = pytest.importorskip("numpy")
safetensors_numpy = pytest.importorskip("safetensors.numpy")


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """The weights of tiny.ss keyed by param path."""
    tmp = tmp_path_factory.mktemp("weights")
    (tmp / "tiny.ss").write_text(TINY)
    assert main(["export", str(tmp / "tiny.ss"), "--hf", "--random-weights", "-o", str(tmp / "ref")]) == 0
    keys = json.loads((tmp / "ref" / "shapescript-weights.json").read_text())["keys"]
    sd = safetensors_numpy.load_file(str(tmp / "ref" / "model.safetensors"))
    safetensors_numpy.save_file({p: sd[k] for p, k in keys.items()}, str(tmp / "good.safetensors"))
    return tmp


def export(capsys, tmp_path, good, weights):
    code = main(["export", str(good / "tiny.ss"), "--hf", "--weights", str(weights), "-o", str(tmp_path / "out")])
    cap = capsys.readouterr()
    err = cap.out + cap.err
    assert code == 1 and "Traceback" not in err and "internal error" not in err, err
    assert not (tmp_path / "out").exists()
    return err


def test_the_good_weights_export(good, tmp_path, capsys):
    assert main(["export", str(good / "tiny.ss"), "--hf", "--weights", str(good / "good.safetensors"),
                 "-o", str(tmp_path / "out")]) == 0


def test_a_deeply_nested_header_is_refused(good, tmp_path, capsys):
    raw = b"[" * 100_000 + b"]" * 100_000
    (tmp_path / "deep.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    err = export(capsys, tmp_path, good, tmp_path / "deep.safetensors")
    assert "nested too deeply" in err


def test_a_shard_outside_the_weights_directory_is_not_read(good, tmp_path, capsys):
    (tmp_path / "idx").mkdir()
    keys = json.loads((good / "ref" / "shapescript-weights.json").read_text())["keys"]
    for shard in (str(good / "good.safetensors"), "../good.safetensors"):
        index = {"weight_map": {p: shard for p in keys}}
        (tmp_path / "idx" / "model.safetensors.index.json").write_text(json.dumps(index))
        err = export(capsys, tmp_path, good, tmp_path / "idx")
        assert "leads out of the weights directory" in err


def test_a_link_leading_out_is_refused_and_its_bytes_never_shown(good, tmp_path, capsys):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "model.safetensors").symlink_to(tmp_path / "outside" / "passwd")
    err = export(capsys, tmp_path, good, tmp_path / "link")
    assert "leads out of the weights directory" in err
    # named directly, the file is read, but its first 8 bytes are not shown
    err = export(capsys, tmp_path, good, tmp_path / "outside" / "passwd")
    n = struct.unpack("<Q", b"root:x:0")[0]
    assert str(n) not in err and "root:x:0" not in err and b"root:x:0".hex() not in err
    assert "header length" in err


def test_an_oversized_header_is_refused_before_it_is_parsed(good, tmp_path, capsys):
    raw = b"{" + b" " * (17 * 1024 * 1024) + b"}"
    (tmp_path / "big.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    err = export(capsys, tmp_path, good, tmp_path / "big.safetensors")
    assert "its header is over 16 MB" in err


def test_a_fifo_is_refused_without_waiting(good, tmp_path):
    os.mkfifo(tmp_path / "fifo.safetensors")
    p = cli("export", good / "tiny.ss", "--hf", "--weights", tmp_path / "fifo.safetensors", "-o", tmp_path / "out",
            timeout=120)
    assert p.returncode == 1 and "not a regular file" in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()
