"""The command line's conventions (docs/command-line.md): `--version`; `check` on files,
folders (all `.ss` below, `exclude` of shapescript.toml honoured) or, with no path, the
project of the current folder; `--format github` annotations; the pre-commit hook."""
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys

import pytest

import lockfile
from checkout import ROOT, shapescript
from shapescript_core.diagnostics import Diagnostic, FileAnchor, Severity, Span
from shapescript_core.render import render_github
from shapescript_core.syntax.source import LineIndex

BROKEN = os.path.join(ROOT, "examples", "broken_attention.ss")  # E0408 at 14:27-34
CLEAN = "dim D = 4\n\nfn f(x: [n D]) -> [n D]:\n    return x\n"
UNKNOWN = "dim D = 4\n\nfn f(x: [n D]) -> [n D]:\n    return y\n"  # E0201 at 4:12


def _files(p) -> list:
    """(file relative to the project, code) of each error in `check --format json`'s output."""
    return sorted((os.path.basename(os.path.dirname(d["file"])) + "/" + os.path.basename(d["file"]), d["code"])
                  for d in map(json.loads, p.stdout.splitlines()) if d["severity"] == "error")


@pytest.fixture
def project(tmp_path):
    """A project: shapescript.toml at the top, files to check and files to skip."""
    root = tmp_path / "proj"
    files = {
        "src/good.ss": CLEAN,
        "src/bad.ss": UNKNOWN,
        "src/deeper/worse.ss": UNKNOWN,
        "src/notes.txt": "not a program",
        "build/bad.ss": UNKNOWN,                  # excluded: a folder name
        "src/model_generated.ss": UNKNOWN,        # excluded: a file name glob
        "vendor/old/bad.ss": UNKNOWN,             # excluded: a path from the root
        "vendor/kept.ss": UNKNOWN,
        ".hidden/bad.ss": UNKNOWN,                # hidden folders are skipped
        "node_modules/pkg/bad.ss": UNKNOWN,       # tool folders too
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "shapescript.toml").write_text('exclude = ["build", "*_generated.ss", "vendor/old/"]\n',
                                           encoding="utf-8")
    return root


KEPT = [("deeper/worse.ss", "E0201"), ("src/bad.ss", "E0201"), ("vendor/kept.ss", "E0201")]


def test_version():
    p = shapescript("--version")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"shapescript {importlib.metadata.version('shapescript')}\n", "")


def test_a_folder_is_every_ss_file_below_it_minus_the_excluded(project):
    p = shapescript("check", "--format", "json", project)
    assert p.returncode == 1, p.stderr
    assert _files(p) == KEPT
    # a folder inside the project: the project's exclusions still hold
    p = shapescript("check", "--format", "json", project / "vendor")
    assert (p.returncode, _files(p)) == (1, [("vendor/kept.ss", "E0201")])
    # a clean folder exits 0 and prints nothing
    (project / "clean").mkdir()
    (project / "clean" / "a.ss").write_text(CLEAN, encoding="utf-8")
    p = shapescript("check", project / "clean")
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_no_path_is_the_project_of_the_current_folder(project, tmp_path):
    p = shapescript("check", "--format", "json", cwd=project / "src" / "deeper")  # toml two levels up
    assert (p.returncode, _files(p)) == (1, KEPT)
    # no shapescript.toml above: the current folder
    alone = tmp_path / "alone"
    (alone / "sub").mkdir(parents=True)
    (alone / "sub" / "x.ss").write_text(UNKNOWN, encoding="utf-8")
    (alone / "sub" / "build").mkdir()
    (alone / "sub" / "build" / "y.ss").write_text(UNKNOWN, encoding="utf-8")  # nothing excludes it here
    p = shapescript("check", "--format", "json", cwd=alone / "sub")
    assert (p.returncode, _files(p)) == (1, [("build/y.ss", "E0201"), ("sub/x.ss", "E0201")])


def test_files_and_folders_mixed_each_file_once(project):
    named = project / "build" / "bad.ss"  # excluded in a walk, but named: checked
    p = shapescript("check", "--format", "json", project / "src" / "bad.ss", project / "src", named,
                    cwd=project)
    assert p.returncode == 1
    assert _files(p) == [("build/bad.ss", "E0201"), ("deeper/worse.ss", "E0201"), ("src/bad.ss", "E0201")]


def test_relative_paths_print_as_given(project):
    p = shapescript("check", "src", cwd=project)
    assert p.returncode == 1
    assert "--> src/bad.ss:4:12" in p.stdout and "--> src/deeper/worse.ss:4:12" in p.stdout
    assert p.stderr == "2 errors\n"


def test_nothing_to_check_and_missing_paths(tmp_path):
    p = shapescript("check", tmp_path)
    assert (p.returncode, p.stdout) == (0, "")
    assert p.stderr == f"shapescript: no .ss files in `{tmp_path}`\n"
    p = shapescript("check", tmp_path / "nope")
    assert p.returncode == 2
    assert p.stderr == f"shapescript: can't read `{tmp_path / 'nope'}`: no such file or folder\n"


def test_an_invalid_exclude_is_a_warning_and_ignored(tmp_path):
    (tmp_path / "shapescript.toml").write_text('exclude = "build"\n', encoding="utf-8")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "a.ss").write_text(UNKNOWN, encoding="utf-8")
    p = shapescript("check", "--format", "json", cwd=tmp_path)
    assert p.returncode == 1 and _files(p) == [("build/a.ss", "E0201")]
    assert p.stderr == ('shapescript: warning: shapescript.toml: `exclude` takes a list of glob patterns, '
                        'like ["build"]\n')


# ---------------------------------------------------------------- --format github
def test_github_annotations():
    p = shapescript("check", "--format", "github", os.path.relpath(BROKEN, ROOT))
    assert p.returncode == 1 and p.stderr == ""
    assert p.stdout == (
        "::error file=examples/broken_attention.ss,line=14,col=27,endLine=14,endColumn=34,title=E0408::"
        "the pattern calls axis 3 `m`, but `m` is axis 4%0A"
        "help: write the axes in the order the tensor has them, or rearrange it first\n")


def test_github_escapes_the_message_and_the_properties(tmp_path):
    odd = tmp_path / "a,b:c%.ss"
    odd.write_text('import "100%.ss"\n', encoding="utf-8")
    p = shapescript("check", "--format", "github", odd.name, cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout == ("::error file=a%2Cb%3Ac%25.ss,line=1,col=8,endLine=1,endColumn=17,title=E0210::"
                        "can't find `100%25.ss`\n")


def test_github_escapes_line_breaks_and_levels():
    lines = LineIndex("dim D = 4\n")
    d = Diagnostic("W0101", "first\r\nsecond: 50%, done", Span(FileAnchor("/w/x.ss"), 0, 3), Severity.WARNING)
    d.help("a, b")
    assert render_github(d, lambda _: lines, cwd="/w") == (
        "::warning file=x.ss,line=1,col=1,endLine=1,endColumn=4,title=W0101::first%0D%0Asecond: 50%25, done%0A"
        "help: a, b")
    d.severity = Severity.HINT
    assert render_github(d, lambda _: lines, cwd="/w").startswith("::notice file=x.ss,line=1,")


# ---------------------------------------------------------------- pre-commit, docs
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
LOCK = os.path.join(ROOT, "locks", "main.txt")


def test_the_pre_commit_manifest_is_valid():
    p = subprocess.run([*PRE_COMMIT, "validate-manifest", os.path.join(ROOT, ".pre-commit-hooks.yaml")],
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_pre_commit_runs_the_hook_on_the_staged_ss_files(tmp_path):
    """pre-commit's own `try-repo`: it installs this checkout into a fresh hook environment
    (pip, as a user's pre-commit would) and runs the hook on the files given."""
    if not os.path.isdir(os.path.join(ROOT, ".git")) and not os.path.isfile(os.path.join(ROOT, ".git")):
        pytest.skip("the checkout is not a git repository: pre-commit installs hooks from one")
    repo = tmp_path / "user"
    repo.mkdir()
    shutil.copy2(BROKEN, repo / "broken_attention.ss")
    (repo / "clean.ss").write_text(CLEAN, encoding="utf-8")
    (repo / "notes.txt").write_text("not a program\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
               # the hook's pip resolves the project's ranges (and its build backend) to the
               # locked versions: the test does not move when a release is published
               PIP_CONSTRAINT=str(lockfile.constraints_file(tmp_path, LOCK)))
    for cmd in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(cmd, cwd=repo, check=True, env=env, timeout=60)
    p = subprocess.run([*PRE_COMMIT, "try-repo", ROOT, "shapescript-check", "--all-files"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "- hook id: shapescript-check\n- exit code: 1\n" in p.stdout
    assert "error[E0408]" in p.stdout and "--> broken_attention.ss:14:27" in p.stdout
    assert "clean.ss" not in p.stdout and "notes.txt" not in p.stdout and "\n1 error\n" in p.stdout


def test_the_exit_statuses_are_documented():
    for page in ("README.md", os.path.join("docs", "command-line.md")):
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        assert "0" in text and "exit status" in text.lower(), page
    doc = open(os.path.join(ROOT, "docs", "command-line.md"), encoding="utf-8").read()
    for row in ("| 0 | no errors", "| 1 | errors", "| 2 | a usage error"):
        assert row in doc


def test_openblas_gets_one_thread_unless_the_user_chose_a_number(monkeypatch):
    """The command line's process asks OpenBLAS for one thread (its start-up, docs/importing-weights.md);
    a number the user set stays, and a process the command starts sees the user's environment."""
    from shapescript_core import blas_threads
    monkeypatch.delenv(blas_threads.VAR, raising=False)
    monkeypatch.setattr(blas_threads, "_set_here", False)
    blas_threads.one_thread()
    assert os.environ[blas_threads.VAR] == "1"
    assert blas_threads.VAR not in blas_threads.child_env(dict(os.environ))
    monkeypatch.setenv(blas_threads.VAR, "3")
    monkeypatch.setattr(blas_threads, "_set_here", False)
    blas_threads.one_thread()
    assert os.environ[blas_threads.VAR] == "3"
    assert blas_threads.child_env(dict(os.environ))[blas_threads.VAR] == "3"


def test_the_command_s_output_and_status_come_whole_through_a_pipe(tmp_path):
    """`entry` ends the process without the interpreter's teardown: what `main` printed
    (block-buffered into a pipe) is flushed first, and its status is the process's."""
    src = tmp_path / "many.ss"
    src.write_text("dim D = 4\n\n" + "".join(f"fn f{i}(x: [n D]) -> [n D]:\n    return y{i}\n\n" for i in range(300)))
    p = shapescript("check", src, "--format", "json")
    codes = [json.loads(line)["code"] for line in p.stdout.splitlines()]
    assert p.returncode == 1 and codes == ["E0201"] * 300
