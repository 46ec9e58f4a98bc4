"""The `shapescript` command line: rendering, JSON, exit codes, explain."""
import json
import os
import re

import pytest

from checkout import ROOT, SHARED, requires_shared, shapescript

BROKEN = os.path.join(ROOT, "examples", "broken_attention.ss")


def run(*args, cwd=None):
    return shapescript(*args, cwd=cwd, timeout=120)


def test_renders_like_rustc():
    p = run("check", BROKEN)
    assert p.returncode == 1
    out = p.stdout
    assert "error[E0408]: the pattern calls axis 3 `m`, but `m` is axis 4" in out
    lines = out.splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("error[E0408]"))
    assert lines[i + 1].strip().startswith("--> ") and lines[i + 1].endswith(":14:27")
    src_line = lines[i + 3]
    caret_line = lines[i + 4]
    assert src_line.startswith("14 |     return einsum(att, v: b H m n")
    col = src_line.index("b H m n")
    assert caret_line[col:col + 7] == "^^^^^^^" and caret_line.endswith("`att` is [b H n m]")
    assert "= help: write the axes in the order the tensor has them, or rearrange it first" in out


def test_json_one_object_per_diagnostic():
    p = run("check", "--format", "json", BROKEN)
    assert p.returncode == 1
    objs = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    errs = [o for o in objs if o["severity"] == "error"]
    assert len(errs) == 1
    d = errs[0]
    assert d["code"] == "E0408" and d["file"].endswith("broken_attention.ss")
    assert d["range"]["start"] == {"line": 14, "column": 27}
    assert d["range"]["end"] == {"line": 14, "column": 34}
    assert d["labels"][0]["message"] == "`att` is [b H n m]"
    assert d["help"] and isinstance(d["notes"], list) and isinstance(d["fixes"], list)


def test_clean_files_exit_zero():
    p = run("check", os.path.join(ROOT, "examples", "llama.ss"), os.path.join(ROOT, "examples", "gpt2.ss"))
    assert p.returncode == 0, p.stdout
    assert p.stdout.strip() == ""


def test_missing_file_is_one_line_and_exit_2(tmp_path):
    p = run("check", str(tmp_path / "nope.ss"))
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "no such file" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args,says", [
    ([], "usage: shapescript"), (["bogus"], "invalid choice: 'bogus'"),
    (["check", "--format", "xml", "a.ss"], "invalid choice: 'xml'"),
    (["check", "--dim", "V=abc", "x.ss"], "--dim takes NAME=VALUE"), (["check", "--nope"], "unrecognized arguments"),
    (["explain"], "the following arguments are required: code")])
def test_usage_errors_exit_2(args, says):
    p = run(*args)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_binary_input_does_not_crash(tmp_path):
    b = tmp_path / "bin.ss"
    b.write_bytes(b"\xff\xfe\x00dim")
    p = run("check", str(b))
    assert p.returncode == 2 and p.stderr.startswith(f"shapescript: can't read `{b}`")
    assert "Traceback" not in p.stderr


def test_explain_prints_the_page():
    p = run("explain", "E0408")
    assert p.returncode == 0
    assert p.stdout.startswith("# E0408") and "rearrange" in p.stdout
    p = run("explain", "E9999")
    assert p.returncode == 2


@requires_shared
def test_every_code_of_the_shared_catalog_has_a_page():
    from shapescript_core import explain
    catalog = open(os.path.join(SHARED, "spec", "ERRORS.md"), encoding="utf-8").read()
    codes = set(re.findall(r"\| (E\d{4}) \|", catalog)) | {f"E330{i}" for i in range(1, 7)}
    assert codes <= set(explain.codes())


def test_unknown_function_is_a_usage_error():
    for args in (["check", "--fn", "nosuch", "examples/classifier.ss"],
                 ["export", "--hf", "--fn", "nosuch", "examples/classifier.ss"]):
        p = run(*args)
        assert p.returncode == 2 and "`nosuch` isn't a function" in p.stderr
