"""Reading files safely (shapescript_core/files.py) and the CLI under odd input: the
reproductions of ../shared/repro/security/11_cli_odd_input.sh as tests, and the rules
behind them (docs/security.md)."""
import os
import stat
import subprocess
import threading

import pytest

from checkout import shapescript
from shapescript_core.files import (Access, ReadRefused, human_size, parse_size, read_bytes, walk_files)
from shapescript_core.workspace import Workspace

TINY = """dim V = 64
dim D = 32
dim L = 2

model Block:
    w: [D D]

model Lm:
    embed: [V D]
    layers: [L] Block
    lm_head: [V D]

@export(hf, vllm, gguf)
fn forward(m: Lm, ids: [b n] Index[V]) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = x + linear(x, layer.w)
    return linear(x, m.lm_head)
"""


def finishes(fn, seconds=10):
    """fn() returns (or raises) within `seconds`: a read that blocks never does."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s (blocked)"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def refusal(path, access=Access()):
    with pytest.raises(ReadRefused) as e:
        finishes(lambda: read_bytes(str(path), access))
    return e.value.refusal


# ---------------------------------------------------------------- the one reader
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.ss"
    os.mkfifo(fifo)
    r = refusal(fifo)
    assert (r.kind, r.reason) == ("special", "it is a FIFO (named pipe), not a regular file")


def test_devices_and_folders_are_refused(tmp_path):
    assert refusal("/dev/zero").reason == "it is a character device, not a regular file"
    assert refusal(tmp_path).kind == "directory"
    assert refusal(tmp_path / "none.ss").kind == "missing"


def test_the_size_limit_refuses_a_larger_file_and_reads_one_at_it(tmp_path):
    f = tmp_path / "big.ss"
    f.write_bytes(b"x" * 101)
    r = refusal(f, Access(limit=100))
    assert r.kind == "too_large" and "it is 101 bytes, over the limit of 100 bytes" in r.reason
    f.write_bytes(b"x" * 100)
    assert read_bytes(str(f), Access(limit=100)) == b"x" * 100


def test_files_whose_size_stat_does_not_tell_are_bounded_too():
    data = read_bytes("/proc/self/status", Access(limit=1 << 20))
    assert b"Name:" in data
    assert refusal("/proc/self/status", Access(limit=10)).kind == "too_large"


def test_paths_no_file_can_have_are_refused():
    assert refusal("a\x00b").reason == "the path holds a NUL character"
    r = refusal("/tmp/\ud800.ss")
    assert r.kind == "bad_path"


def test_outside_the_roots_nothing_is_opened_and_symlinks_count_where_they_lead(tmp_path):
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    out.mkdir()
    (out / "secret.ss").write_text("dim S = 1\n")
    (ws / "link.ss").symlink_to(out / "secret.ss")
    (ws / "ok.ss").write_text("dim D = 1\n")
    access = Access.within([str(ws)])
    assert refusal(out / "secret.ss", access).kind == "outside"
    assert refusal(ws / "link.ss", access).kind == "outside"
    assert refusal(ws / ".." / "out" / "secret.ss", access).kind == "outside"
    assert read_bytes(str(ws / "ok.ss"), access) == b"dim D = 1\n"


def test_sizes_are_read_and_said():
    assert parse_size("16 MiB") == 16 * 1024 * 1024
    assert parse_size("2GB") == 2 * 10 ** 9
    assert parse_size(512) == 512
    assert [parse_size(x) for x in ("", "-1", "lots", 0, True, "1e999")] == [None] * 6
    assert human_size(16 * 1024 * 1024) == "16 MiB"
    assert human_size(256 * 1024 ** 3) == "256 GiB"
    assert human_size(10 ** 5000) == "about 10^5000 bytes"  # no 4,300-digit conversion


# ---------------------------------------------------------------- the walk
def test_the_walk_skips_special_files_and_links_out(tmp_path):
    ws, out = tmp_path / "ws", tmp_path / "out"
    (ws / "sub").mkdir(parents=True)
    out.mkdir()
    (ws / "a.ss").write_text("")
    (ws / "sub" / "b.ss").write_text("")
    (out / "c.ss").write_text("")
    os.mkfifo(ws / "pipe.ss")
    (ws / "out.ss").symlink_to(out / "c.ss")
    (ws / "outdir").symlink_to(out, target_is_directory=True)
    (ws / "in.ss").symlink_to(ws / "a.ss")
    (ws / ".hidden").mkdir()
    (ws / ".hidden" / "h.ss").write_text("")
    got = finishes(lambda: sorted(os.path.relpath(p, ws) for p in walk_files([str(ws)], ".ss")))
    assert got == ["a.ss", "in.ss", os.path.join("sub", "b.ss")]


def test_the_walk_is_bounded_in_entries_and_time(tmp_path):
    for i in range(50):
        (tmp_path / f"f{i:02}.ss").write_text("")
    assert len(list(walk_files([str(tmp_path)], ".ss", max_entries=10))) <= 10
    found = finishes(lambda: list(walk_files(["/"], ".ss", seconds=0.5)), seconds=20)
    assert isinstance(found, list)  # a root of `/` ends: it stops, it doesn't walk the disk


# ---------------------------------------------------------------- imports: E0214
def _import_diags(tmp_path, target: str, access=None):
    src = tmp_path / "main.ss"
    text = f'import "{target}"\ndim D = 4\n'
    ws = Workspace(access=access)
    ws.set_text(str(src), text)
    return finishes(lambda: [d for d in ws.diagnostics(str(src))])


@pytest.mark.parametrize("target, reason", [
    ("zero.ss", "it is a character device, not a regular file"),
    ("pipe.ss", "it is a FIFO (named pipe), not a regular file"),
])
def test_an_import_that_cant_be_read_safely_is_E0214_at_the_import(tmp_path, target, reason):
    os.mkfifo(tmp_path / "pipe.ss")
    os.mknod(tmp_path / "zero.ss", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's twin, in the project
    diags = _import_diags(tmp_path, target)
    assert [(d.code, d.span.abs_start) for d in diags] == [("E0214", 7)]
    assert diags[0].message.endswith(reason)


@pytest.mark.parametrize("target", ["/dev/zero", "a\x00b.ss", "../big.ss"])
def test_an_import_outside_the_project_is_E0213_and_never_opened(tmp_path, target):
    """The import rule (E0213) decides before any read: a device, a path with a NUL,
    a file outside the project is no import, so nothing is opened."""
    diags = _import_diags(tmp_path, target)
    assert [(d.code, d.span.abs_start) for d in diags] == [("E0213", 7)]


def test_an_import_over_the_limit_is_E0214_and_outside_the_roots_E0213(tmp_path):
    (tmp_path / "big.ss").write_text("dim B = 1\n" * 20)
    d = _import_diags(tmp_path, "big.ss", Access(limit=100))
    assert [x.code for x in d] == ["E0214"] and "over the limit of 100 bytes" in d[0].message
    ws = tmp_path / "ws"
    ws.mkdir()
    d = _import_diags(ws, "../big.ss", Access.within([str(ws)]))
    assert [x.code for x in d] == ["E0213"]  # outside the project: the import rule refuses it unread
    assert _import_diags(ws, "missing.ss", Access.within([str(ws)]))[0].code == "E0210"


# ---------------------------------------------------------------- the CLI
def test_check_on_a_fifo_is_a_clear_refusal(tmp_path):
    os.mkfifo(tmp_path / "fifo.ss")
    r = shapescript("check", "fifo.ss", cwd=tmp_path, timeout=30)
    assert r.returncode == 2
    assert r.stderr.strip() == "shapescript: can't read `fifo.ss`: it is a FIFO (named pipe), not a regular file"


def test_the_settings_limit_applies_to_the_cli(tmp_path):
    (tmp_path / "shapescript.toml").write_text('[limits]\nmax_file_size = "1 KiB"\n')
    (tmp_path / "m.ss").write_text("dim D = 4\n" * 200)
    r = shapescript("check", "m.ss", cwd=tmp_path, timeout=30)
    assert r.returncode == 2 and "over the limit of 1 KiB" in r.stderr


def test_dims_past_int64_are_E0208_not_a_traceback(tmp_path):
    (tmp_path / "a.ss").write_text("dim Q = " + "9" * 5000 + "\n")
    (tmp_path / "b.ss").write_text("dim Q = " + "*".join(["99999999999"] * 2000) + "\n")
    (tmp_path / "c.ss").write_text("dim Q = 1 - " + "*".join(["99999999999"] * 2000) + "\n")
    for name in ("a.ss", "b.ss", "c.ss"):
        r = shapescript("check", "--format", "json", name, cwd=tmp_path, timeout=60)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stdout.count('"code": "E0208"') == 1 and "is too large" in r.stdout
    r = shapescript("check", "--format", "json", "a.ss", "--dim", "Q=9223372036854775807", cwd=tmp_path)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("value, message", [
    ("²", "--dim takes NAME=VALUE with a positive integer, got `V=²`"),
    ("٣", "--dim takes NAME=VALUE with a positive integer, got `V=٣`"),
    ("99999999999999999999999", "--dim V is at most 2^63 − 1 (9223372036854775807), got 99999999999999999999999"),
])
def test_odd_dim_options_are_usage_errors(tmp_path, value, message):
    (tmp_path / "lm.ss").write_text(TINY)
    r = shapescript("export", "lm.ss", "--gguf", "--random-weights", "--dim", f"V={value}", "-o", "o.gguf",
                    cwd=tmp_path, timeout=60)
    assert (r.returncode, r.stderr.strip()) == (2, f"shapescript: {message}")
    assert not (tmp_path / "o.gguf").exists()


def test_a_tensor_over_the_cap_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "lm.ss").write_text(TINY)
    r = shapescript("export", "lm.ss", "--hf", "--random-weights", "--dim", "V=2147483648", "-o", "out",
                    cwd=tmp_path, timeout=60)
    assert r.returncode == 1
    assert ("not exported: the param `embed` [2147483648 32] would take 256 GiB (and 1 more), over the "
            "per-tensor limit of 16 GiB") in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["lm.ss"]


def test_too_large_for_the_disk_is_refused_up_front(tmp_path):
    (tmp_path / "lm.ss").write_text(TINY)
    (tmp_path / "shapescript.toml").write_text('[limits]\nmax_tensor_size = "1000 PiB"\n')
    r = shapescript("export", "lm.ss", "--hf", "--random-weights", "--dim", "V=1000000000000000",
                    "-o", "out", cwd=tmp_path, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "not exported: the weights would take 227 PiB, and the disk of" in r.stderr
    assert "free; nothing was written" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["lm.ss", "shapescript.toml"]


def test_fix_on_a_read_only_file_is_a_clear_error(tmp_path):
    f = tmp_path / "ro.ss"
    f.write_text("dim D = 8\nmodel M:\n    w: [D D]\n\n@export(hf)\nfn classify(x: [b D], m: M) -> [b D]:\n"
                 "    return x @ m.w\n")
    f.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = f.read_text()
    cmd = ["check", "--fix", str(f)]
    if os.geteuid() == 0:  # root writes anyway: drop the capabilities that bypass permissions
        if subprocess.run(["setpriv", "--version"], capture_output=True).returncode != 0:
            pytest.skip("running as root without setpriv: permissions can't be tested")
        from checkout import CLI, cli_env
        r = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--", *CLI, *cmd],
                           capture_output=True, text=True, env=cli_env(), timeout=60)
    else:
        r = shapescript(*cmd, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith(f"shapescript: can't write the fixes to `{os.path.relpath(f)}`: "
                                     "permission denied (the file is left as it was)")
    assert "Traceback" not in r.stderr and f.read_text() == before


def test_weights_that_are_a_fifo_are_refused_not_waited_for(tmp_path):
    (tmp_path / "lm.ss").write_text(TINY)
    os.mkfifo(tmp_path / "w.safetensors")
    r = shapescript("export", "lm.ss", "--hf", "--weights", "w.safetensors", "-o", "out", cwd=tmp_path, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip().endswith(f"shapescript: can't read the weights `{tmp_path / 'w.safetensors'}`: "
                                     "it is a FIFO (named pipe), not a regular file")
    assert not (tmp_path / "out").exists()


def test_with_no_folder_open_a_path_is_refused_in_words(tmp_path):
    from shapescript_core.files import check_path, outside_problem
    f = tmp_path / "a.ss"
    f.write_text("dim D = 4\n")
    nothing = Access(roots=())
    _, why = check_path(str(f), nothing)
    assert (why.kind, why.reason) == ("outside", "no workspace folder is open, nor any document beside it")
    assert outside_problem(str(f), nothing, "the output") == \
        f"the output `{f}` is outside the workspace folders: the editor reads and writes only inside it"
