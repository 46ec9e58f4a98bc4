"""The VS Code extension's manifest and script are well formed (it is not driven in a
real VS Code here: see docs/language-server.md)."""
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(ROOT, "editors", "vscode")


def test_manifest_registers_the_language_and_the_server_settings():
    pkg = json.load(open(os.path.join(EXT, "package.json"), encoding="utf-8"))
    (lang,) = pkg["contributes"]["languages"]
    assert lang["id"] == "shapescript" and lang["extensions"] == [".ss"]
    assert os.path.exists(os.path.join(EXT, lang["configuration"]))
    assert os.path.exists(os.path.join(EXT, pkg["main"]))
    props = pkg["contributes"]["configuration"]["properties"]
    assert props["shapescript.server.command"]["default"] == ["shapescript-lsp"]
    assert "vscode-languageclient" in pkg["dependencies"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_extension_script_parses():
    p = subprocess.run(["node", "--check", os.path.join(EXT, "extension.js")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
