"""Reproduction 10 of ../shared/repro/security as tests: --force replaces only an earlier
export of ours, the final rename never replaces what appeared meanwhile, temporaries
fit NAME_MAX. The races are made deterministic: a writer that does what the other party
would do while the export runs."""
from __future__ import annotations

import os
import stat

import pytest

from security_support import TINY
from shapescript_core.cli import main
from shapescript_core.export import writers
from shapescript_core.export.atomic import MARK, rename_noreplace, temp_path
from shapescript_core.export.output import MARKER, OutputRefused, check_output

DURING = {"action": None}


def racing_write(ctx):
    """The real hf writer, then what happens beside the export meanwhile."""
    from shapescript_core.export.hf.writer import write
    summary = write(ctx)
    action, DURING["action"] = DURING["action"], None
    if action is not None:
        action()
    return summary


@pytest.fixture
def src(tmp_path, monkeypatch):
    monkeypatch.setitem(writers.WRITERS, "hf", "test_security_output:racing_write")
    (tmp_path / "src").mkdir()
    p = tmp_path / "src" / "m.ss"
    p.write_text(TINY)
    return p


def export(capsys, *args):
    code = main(["export", *map(str, args), "--random-weights"])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def leftovers(folder) -> list:
    return [n for n in os.listdir(folder) if MARK in n]


def test_force_onto_a_directory_of_other_files_is_refused(src, tmp_path, capsys):
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "notes.txt").write_text("precious")
    for target in ("--gguf", "--hf"):
        code, err = export(capsys, src, target, "-o", photos, "--force")
        assert code == 1 and "--force won't replace" in err and len(err.strip().splitlines()) == 1, err
        assert os.listdir(photos) == ["notes.txt"]


def test_force_onto_a_fifo_or_a_link_is_refused(src, tmp_path, capsys):
    fifo = tmp_path / "fakenull"
    os.mkfifo(fifo)
    code, err = export(capsys, src, "--gguf", "-o", fifo, "--force")
    assert code == 1 and "it is not an earlier GGUF export" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    real = tmp_path / "real"
    real.mkdir()
    (real / MARKER).write_text("{}")
    (tmp_path / "link").symlink_to(real)
    code, err = export(capsys, src, "--hf", "-o", tmp_path / "link", "--force")
    assert code == 1 and os.path.islink(tmp_path / "link") and os.listdir(real) == [MARKER]


def test_force_replaces_an_earlier_export(src, tmp_path, capsys):
    gguf = tmp_path / "m.gguf"
    assert export(capsys, src, "--gguf", "-o", gguf)[0] == 0
    assert export(capsys, src, "--gguf", "-o", gguf, "--force", "--seed", "1")[0] == 0
    assert open(gguf, "rb").read(4) == b"GGUF"
    gguf.write_bytes(b"not a gguf")
    code, err = export(capsys, src, "--gguf", "-o", gguf, "--force")
    assert code == 1 and gguf.read_bytes() == b"not a gguf"
    out = tmp_path / "out"
    assert export(capsys, src, "--hf", "-o", out)[0] == 0
    assert export(capsys, src, "--hf", "-o", out, "--force")[0] == 0
    assert (out / MARKER).is_file() and leftovers(tmp_path) == []


def test_the_current_directory_home_and_root_are_never_an_output(src, tmp_path, capsys, monkeypatch):
    cwd = tmp_path / "a" / "cwd"
    cwd.mkdir(parents=True)
    (cwd / "important.txt").write_text("mine")
    (cwd / MARKER).write_text("{}")  # even one that looks like an export
    monkeypatch.chdir(cwd)
    code, err = export(capsys, src, "--hf", "-o", "", "--force")
    assert code == 1 and "it is the current directory" in err
    code, err = export(capsys, src, "--hf", "-o", "..", "--force")
    assert code == 1 and "it holds the current directory" in err
    assert sorted(os.listdir(cwd)) == [MARKER, "important.txt"]
    with pytest.raises(OutputRefused, match="root of the file system|holds the current directory"):
        check_output("/", "dir", True)
    with pytest.raises(OutputRefused, match="home directory"):
        check_output(os.path.expanduser("~"), "dir", True)
    with pytest.raises(OutputRefused, match="control characters"):
        check_output(str(tmp_path / "a\nb"), "dir", True)


def test_a_folder_holding_an_imported_source_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(writers.WRITERS, "hf", "test_security_output:racing_write")
    (tmp_path / "shapescript.toml").write_text("")  # the project: imports may cross folders in it
    (tmp_path / "lib").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "lib" / "layers.ss").write_text("dim Z = 4\n")
    (tmp_path / "lib" / MARKER).write_text("{}")
    (tmp_path / "app" / "m.ss").write_text('import "../lib/layers.ss"\n' + TINY)
    code, err = export(capsys, tmp_path / "app" / "m.ss", "--hf", "-o", tmp_path / "lib", "--force")
    assert code == 1 and "it holds `layers.ss`, a source of the program" in err
    assert sorted(os.listdir(tmp_path / "lib")) == [MARKER, "layers.ss"]


def test_a_directory_made_during_the_export_survives(src, tmp_path, capsys):
    out = tmp_path / "out"

    def user():
        out.mkdir()
        (out / "precious.txt").write_text("made meanwhile")
    DURING["action"] = user
    code, err = export(capsys, src, "--hf", "-o", out)
    assert code == 1 and "appeared while this export ran" in err and "nothing was written" in err
    assert os.listdir(out) == ["precious.txt"] and leftovers(tmp_path) == []


def test_an_empty_directory_made_during_the_export_is_not_replaced(src, tmp_path, capsys):
    out = tmp_path / "out"
    DURING["action"] = out.mkdir
    code, err = export(capsys, src, "--gguf", "-o", tmp_path / "o.gguf")
    assert code == 0, err  # (the action ran inside the gguf export? no: only hf runs it)
    DURING["action"] = out.mkdir
    code, err = export(capsys, src, "--hf", "-o", out)
    assert code == 1 and os.listdir(out) == [] and leftovers(tmp_path) == []


def test_of_two_exports_to_one_output_one_wins_and_the_other_says_so(src, tmp_path, capsys):
    out = tmp_path / "out"
    second = {}

    def other_export():
        second["code"] = main(["export", str(src), "--hf", "--random-weights", "--seed", "1", "-o", str(out)])
    DURING["action"] = other_export
    code, err = export(capsys, src, "--hf", "-o", out)
    assert second["code"] == 0 and code == 1 and "appeared while this export ran" in err
    assert (out / MARKER).is_file() and leftovers(tmp_path) == []


def test_a_long_output_name_fits_name_max(src, tmp_path, capsys):
    out = tmp_path / ("a" * 240)
    code, err = export(capsys, src, "--hf", "-o", out)
    assert code == 0, err
    assert (out / "config.json").is_file() and leftovers(tmp_path) == []
    assert len(os.fsencode(os.path.basename(temp_path(str(tmp_path / ("é" * 127)))))) <= 255


def test_rename_noreplace_never_replaces(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("new")
    b.mkdir()
    with pytest.raises(FileExistsError):
        rename_noreplace(str(a), str(b))
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileExistsError):
        rename_noreplace(str(d), str(empty))  # os.rename would replace an empty directory
    rename_noreplace(str(d), str(tmp_path / "free"))
    assert (tmp_path / "free" / "x").read_text() == "x" and a.read_text() == "new"
