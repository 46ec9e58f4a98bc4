"""The VS Code extension without VS Code: its manifest agrees with its code and the
server, the TypeScript type-checks, and the TextMate grammar tokenizes as VS Code does
(vscode-textmate with Oniguruma, editors/vscode/test/unit/). The extension in a real VS
Code is tests/test_vscode_e2e.py."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from vscode_support import EXT, missing_toolchain

PKG = json.load(open(os.path.join(EXT, "package.json"), encoding="utf-8"))
SOURCES = {name: open(os.path.join(EXT, "src", name), encoding="utf-8").read()
           for name in os.listdir(os.path.join(EXT, "src")) if name.endswith(".ts")}


def test_manifest_registers_the_language_grammar_snippets_and_configuration():
    (lang,) = PKG["contributes"]["languages"]
    assert lang["id"] == "shapescript" and lang["extensions"] == [".ss"]
    conf = json.load(open(os.path.join(EXT, lang["configuration"]), encoding="utf-8"))
    assert conf["comments"]["lineComment"] == "#"
    assert ["[", "]"] in conf["brackets"] and ["(", ")"] in conf["brackets"]
    indent = re.compile(conf["indentationRules"]["increaseIndentPattern"])
    assert indent.search("fn f(x: [b D]) -> [b D]:") and indent.search("model M:  # doc")
    assert not indent.search("    y = x  # note:") and not indent.search("# a comment:")
    (grammar,) = PKG["contributes"]["grammars"]
    assert grammar["language"] == "shapescript" and grammar["scopeName"] == "source.shapescript"
    tm = json.load(open(os.path.join(EXT, grammar["path"]), encoding="utf-8"))
    assert tm["scopeName"] == grammar["scopeName"]
    (snippets,) = PKG["contributes"]["snippets"]
    snip = json.load(open(os.path.join(EXT, snippets["path"]), encoding="utf-8"))
    assert {s["prefix"] for s in snip.values()} == {"model", "fn", "@export", "dim"}


def test_every_command_is_contributed_and_registered():
    contributed = {c["command"] for c in PKG["contributes"]["commands"]}
    assert contributed == {"shapescript.exportFunction", "shapescript.explainError",
                           "shapescript.restartServer", "shapescript.showServerLog"}
    code = "\n".join(SOURCES.values())
    registered = set(re.findall(r"registerCommand\(\s*'([^']+)'", code))
    registered |= {"shapescript.exportFunction"} if "registerCommand(EXPORT_UI_COMMAND" in code else set()
    assert registered == contributed
    assert "EXPORT_UI_COMMAND = 'shapescript.exportFunction'" in SOURCES["server.ts"]
    titles = {c["command"]: f"{c['category']}: {c['title']}" for c in PKG["contributes"]["commands"]}
    assert titles["shapescript.exportFunction"] == "ShapeScript: Export…"
    assert titles["shapescript.explainError"] == "ShapeScript: Explain error under cursor"


def test_the_lens_command_is_the_servers():
    """The middleware rewrites the server's lens command; it must be the server's name."""
    try:
        from shapescript_server import convert
    except ImportError:
        from shapescript_server import convert
    assert f"EXPORT_COMMAND = '{convert.EXPORT_COMMAND}'" in SOURCES["server.ts"]


def test_settings_are_described_and_their_defaults_leave_the_servers_alone():
    props = PKG["contributes"]["configuration"]["properties"]
    for name in ("shapescript.server.command", "shapescript.server.maxRestarts", "shapescript.trace.server",
                 "shapescript.default_targets", "shapescript.dims", "shapescript.export.output",
                 "shapescript.export.weights", "shapescript.export.randomWeights", "shapescript.export.seed",
                 "shapescript.export.dtype"):
        assert name in props, name
        assert len(props[name].get("markdownDescription", props[name].get("description", ""))) > 20, name
    assert props["shapescript.server.command"]["default"] == []
    assert props["shapescript.trace.server"]["enum"] == ["off", "messages", "verbose"]
    # the server reads the section `shapescript`; null defaults don't override shapescript.toml
    from shapescript_core.settings import parse_settings
    defaults = {}
    for name, p in props.items():
        node = defaults
        *parents, leaf = name.split(".")[1:]
        for k in parents:
            node = node.setdefault(k, {})
        node[leaf] = p["default"]
    cfg = parse_settings(defaults)
    assert cfg.problems == [] and cfg.export == {} and cfg.dims == {} and cfg.default_targets is None
    cfg = parse_settings({**defaults, "export": {"output": "out", "randomWeights": True, "seed": 3, "dtype": "f16"}})
    assert cfg.export == {"output": "out", "random_weights": True, "seed": 3, "dtype": "f16"}, cfg


@pytest.fixture(scope="module")
def node_modules():
    why = missing_toolchain()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the VS Code toolchain is missing under CI: {why}")
        pytest.skip(f"the VS Code toolchain is missing ({why}): run scripts/setup_vscode.sh")


def test_typescript_typechecks(node_modules):
    p = subprocess.run(["npm", "run", "--silent", "typecheck"], cwd=EXT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_grammar_unit_tests(node_modules):
    p = subprocess.run(["node", "--test", "test/unit/"], cwd=EXT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert re.search(r"^# pass [1-9]", p.stdout, re.M) and re.search(r"^# fail 0$", p.stdout, re.M), p.stdout
