"""Every program gives what it gave before a refactor: each diagnostic (no target, each
target, vLLM split two ways) and each target's generated files for each exported function
(tests/snapshot_support.py). A change of behaviour is a reviewed change of the snapshots
(`python tests/snapshot_support.py write`), never a side effect of moving code."""
import json
import os

import pytest

from snapshot_support import programs, snapshot, snapshot_file

CASES = programs()


def test_every_program_has_a_snapshot_and_every_snapshot_a_program():
    names = {os.path.basename(snapshot_file(n)) for n, _ in CASES}
    kept = set(os.listdir(os.path.dirname(snapshot_file("x"))))
    local = {n for n in kept if not n.startswith("conformance__")}
    assert local <= names and len(local) >= 40
    assert {n for n in names if not n.startswith("conformance__")} <= kept


@pytest.mark.parametrize("name,path", CASES, ids=[n for n, _ in CASES])
def test_a_program_gives_what_its_snapshot_says(name, path):
    with open(snapshot_file(name), encoding="utf-8") as fh:
        want = json.load(fh)
    assert snapshot(path) == want


def test_the_snapshot_sees_a_changed_message_and_a_changed_generated_file(monkeypatch):
    """The comparison can fail: a different message and a different modeling module."""
    name, path = next((n, p) for n, p in CASES if n == "examples/llama.ss")
    with open(snapshot_file(name), encoding="utf-8") as fh:
        want = json.load(fh)
    got = snapshot(path)
    assert got == want
    assert any(k.startswith("generated") for k in got)
    import shapescript_core.export.hf.build as build
    orig = build.build

    def changed(*a, **k):
        art = orig(*a, **k)
        art.modeling += "\n# changed\n"
        return art
    monkeypatch.setattr(build, "build", changed)
    assert snapshot(path) != want
