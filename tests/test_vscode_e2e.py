"""The VS Code extension in a real VS Code: code-server 4.100.3 (VS Code 1.100.3) in
headless Chromium, driven by editors/vscode/test/e2e/run.mjs (playwright-core).

The extension is built and packaged (.vsix), installed into a private extensions folder,
and a copy of a workspace with a broken .ss file is opened. Through the UI: the E3306
diagnostic in the Problems panel with its code and link, the hover's shape, the
grammar's scopes (Developer: Inspect Editor Tokens and Scopes), the quick fix from the
light bulb, Explain's docs page, "ShapeScript: Export…" and the "Export ▸ hf" lens writing
the output folder to disk, Go to References (Shift+F12), F2 rename and Format Document,
Export… of a small Llama for gguf alone at q8_0 (the targets pick, the GGUF type pick; the
file's tensor types read back); then a workspace with no server (the notification) and one
whose server crashes (the restart limit).

The toolchain (npm packages, code-server, Chromium) comes from scripts/setup_vscode.sh,
cached outside the clone. Under CI=true a missing toolchain fails the test.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from checkout import ROOT
from vscode_support import CODE_SERVER, EXT, chromium_path, kill_tree, leftover, missing_toolchain, server_command

SOURCE = """\
dim D = 64
dim C = 10

model Classifier:
    w: [C D]

@export(hf)
fn classify(x: [b D], m: Classifier) -> [b C]:
    y = linear(x, m.w)
    return y
"""

# the GGUF step exports examples/llama.ss at a few KB at a quantized type
def llama_source() -> str:
    """examples/llama.ss at a few KB, exported for hf and gguf (its rows, 64 and 128 wide,
    are whole Q8_0 blocks)."""
    text = open(os.path.join(ROOT, "examples", "llama.ss"), encoding="utf-8").read()
    for dim, value in (("V", 256), ("D", 64), ("H", 4), ("Hkv", 2), ("F", 128), ("L", 2)):
        text, n = re.subn(rf"^dim {dim} +=.*$", f"dim {dim} = {value}", text, flags=re.M)
        assert n == 1, dim
    assert "@export(hf, vllm, gguf)" in text
    return text.replace("@export(hf, vllm, gguf)", "@export(hf, gguf)")
GGUF_TYPE = "q8_0"

SETTINGS = {
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
    "telemetry.telemetryLevel": "off",
    "chat.commandCenter.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "editor.minimap.enabled": False,
    "editor.hover.delay": 200,
    "files.autoSave": "off",
    "window.commandCenter": False,
    "workbench.colorTheme": "Default Dark Modern",
    "remote.autoForwardPorts": False,
}


def wait_listening(log_path, proc, timeout: float = 60) -> int:
    """The port code-server listens on (it was given port 0: no race for a free one),
    once it answers /healthz."""
    end = time.monotonic() + timeout
    port = None
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"code-server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        if port is None:
            m = re.search(r"HTTP server listening on http://127\.0\.0\.1:(\d+)/", log_path.read_text(errors="replace"))
            port = int(m.group(1)) if m else None
        if port is not None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return port
            except OSError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"code-server did not start within {timeout} s: {log_path.read_text()[-2000:]}")


def window_logs(user_data, folders: dict) -> dict:
    """{name: text} of the ShapeScript log channel of the window of each workspace folder."""
    logs = {}
    for f in user_data.glob("logs/*/exthost*/shapescript.shapescript/ShapeScript.log"):
        text = f.read_text(errors="replace")
        for name, folder in folders.items():
            if f"{folder}{os.sep}.venv" in text:
                logs[name] = text
    return logs


@pytest.fixture(scope="module")
def toolchain():
    why = missing_toolchain()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the VS Code toolchain is missing under CI: {why}")
        pytest.skip(f"the VS Code toolchain is missing ({why}): run scripts/setup_vscode.sh")


def test_vscode_extension_in_code_server(toolchain, tmp_path):
    started = time.monotonic()
    home = tmp_path / "home"
    for d in ("config", "data", "state", "cache"):
        (home / d).mkdir(parents=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
               XDG_CACHE_HOME=str(home / "cache"))
    env.pop("VSCODE_IPC_HOOK_CLI", None)

    # build and package the extension as a user would
    vsix = tmp_path / "shapescript.vsix"
    p = subprocess.run(["npm", "run", "--silent", "package", "--", "--out", str(vsix)], cwd=EXT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and vsix.exists(), p.stdout + p.stderr

    user_data = tmp_path / "user-data"
    extensions = tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    p = subprocess.run([CODE_SERVER, *common, "--install-extension", str(vsix)], env=env,
                       capture_output=True, text=True, timeout=60, start_new_session=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert any(d.name.startswith("shapescript.shapescript-") for d in extensions.iterdir()), p.stdout

    # the workspace: a broken file, and the server as the workspace's .venv holds it
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    src = ws / "broken.ss"
    src.write_text(SOURCE, encoding="utf-8")
    ugly = ws / "ugly.ss"
    ugly.write_text("dim D=4\nfn f(x:[D])->[D]:\n  return x|>softmax(over=D)\n", encoding="utf-8")
    llama = ws / "tiny_llama.ss"
    llama.write_text(llama_source(), encoding="utf-8")
    server_log = tmp_path / "server.log"
    wrapper = ws / ".venv" / "bin" / "shapescript-lsp"
    wrapper.write_text(f"#!/bin/sh\nexec '{server_command()}' --log-file '{server_log}' --log-level DEBUG \"$@\"\n")
    wrapper.chmod(0o755)

    # a workspace with no server anywhere, and one whose server dies after each start
    ws_missing = tmp_path / "ws-missing"
    ws_missing.mkdir()
    (ws_missing / "a.ss").write_text(SOURCE, encoding="utf-8")
    ws_crash = tmp_path / "ws-crash"
    (ws_crash / ".venv" / "bin").mkdir(parents=True)
    (ws_crash / ".vscode").mkdir()
    (ws_crash / ".vscode" / "settings.json").write_text(json.dumps({"shapescript.server.maxRestarts": 1,
                                                                   "shapescript.trace.server": "messages"}))
    (ws_crash / "a.ss").write_text(SOURCE, encoding="utf-8")
    starts = ws_crash / "starts.log"
    crashing = ws_crash / ".venv" / "bin" / "shapescript-lsp"
    crash_log = tmp_path / "crash-server.log"
    crashing.write_text(
        "#!/bin/sh\n"
        f"echo start >> '{starts}'\n"
        f": > '{crash_log}'\n"
        # killed 1 s after the client's `initialized`: a crash of a running server
        f"( i=0; until grep -q \"Notification 'initialized' received\" '{crash_log}' || [ $i -ge 600 ]; "
        "do i=$((i+1)); sleep 0.1; done; sleep 1; kill -9 $$ ) &\n"
        f"exec '{server_command()}' --log-file '{crash_log}' --log-level DEBUG \"$@\"\n")
    crashing.chmod(0o755)
    # no shapescript-lsp on code-server's PATH: the workspaces' .venv or nothing
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and not os.path.exists(os.path.join(d, "shapescript-lsp")))

    out = tmp_path / "out"
    out.mkdir()
    cs_log = open(tmp_path / "code-server.log", "w")
    cs = subprocess.Popen([CODE_SERVER, *common, "--bind-addr", "127.0.0.1:0", "--auth", "none",
                           "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
                           "--disable-getting-started-override", str(ws)],
                          env=env, stdout=cs_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          start_new_session=True)
    driver = None
    try:
        port = wait_listening(tmp_path / "code-server.log", cs)
        denv = dict(env, SS_URL=f"http://127.0.0.1:{port}/?folder={ws}", SS_OUT=str(out),
                    SS_PROFILE=str(tmp_path / "chromium"), SS_CHROMIUM=chromium_path(), SS_FILE=src.name,
                    SS_GGUF_FILE=llama.name, SS_GGUF_TYPE=GGUF_TYPE,
                    SS_URL_MISSING=f"http://127.0.0.1:{port}/?folder={ws_missing}",
                    SS_URL_CRASH=f"http://127.0.0.1:{port}/?folder={ws_crash}")
        driver = subprocess.Popen(["node", os.path.join(EXT, "test", "e2e", "run.mjs")], cwd=EXT, env=denv,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            driver_out, _ = driver.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            kill_tree(driver)
            driver_out, _ = driver.communicate()
        # the windows' logs reach the disk as their extension hosts end
        end = time.monotonic() + (15 if driver.returncode == 0 else 0)
        while time.monotonic() < end and "not restarting it" not in window_logs(
                user_data, {"crash": ws_crash}).get("crash", ""):
            time.sleep(0.2)
    finally:
        for proc in (driver, cs):
            if proc is not None:
                kill_tree(proc)
        cs_log.close()
        kill_tree(None, str(tmp_path))  # anything else that names this run's folders
    elapsed = time.monotonic() - started
    assert not leftover(str(tmp_path)), "processes of the run are still alive"

    result_file = out / "result.json"
    assert result_file.exists(), f"the driver wrote nothing: {driver_out.decode(errors='replace')[-3000:]}"
    r = json.loads(result_file.read_text(encoding="utf-8"))
    if os.environ.get("SHAPESCRIPT_UPDATE_SCREENSHOT") == "1" and (out / "screenshot.png").exists():
        shutil.copy(out / "screenshot.png", os.path.join(EXT, "images", "screenshot.png"))
    log_tail = (tmp_path / "code-server.log").read_text(errors="replace")[-2000:]
    if server_log.exists():
        log_tail += "\n--- server.log:\n" + server_log.read_text(errors="replace")[-8000:]
    assert r.get("ok"), (f"{r.get('error')}\nsteps done: {r.get('steps')}\nnotifications: {r.get('notifications')}\n"
                         f"{json.dumps(r, indent=1)[:3000]}\ncode-server: {log_tail}\nscreenshot: {out / 'failure.png'}")

    assert r["language"] == "ShapeScript"
    # the E3306 row, its code and link
    assert "E3306" in r["problem"]["text"]
    assert "serving-engines.md#e3306" in (r["problem"]["link"] or ""), r["problem"]
    assert r["squiggles"] >= 1
    assert any("Export ▸ hf" in lens for lens in r["lenses"]), r["lenses"]
    # the language status names the running server
    assert "shapescript-lsp 0.1.0" in r["language_status"], r["language_status"]
    # the hover: x's inferred shape
    assert "x: [b D] f32" in r["hover"], r["hover"]
    # the TextMate grammar, not only semantic tokens
    assert "storage.type.dim.shapescript" in r["scopes"]["dim"], r["scopes"]["dim"]
    assert "entity.name.type.axis.shapescript" in r["scopes"]["axis"], r["scopes"]["axis"]
    assert len(r["mtk"]) >= 3, r["mtk"]
    # the quick fix applied, saved, and the diagnostic gone
    assert any("Make `m` the first parameter" in a for a in r["actions"]), r["actions"]
    assert "fn classify(m: Classifier, x: [b D]) -> [b C]:" in src.read_text(encoding="utf-8")
    assert not any("E3306" in row for row in r["problems_after"]["rows"])
    # Export…: the folder on disk
    assert r["export_output_default"] == "exported/classify-hf"
    exported = ws / "exported" / "classify-hf"
    assert "exported classify for hf" in r["export_message"], r["export_message"]
    assert (exported / "config.json").is_file(), sorted(p.name for p in ws.rglob("*"))
    config = json.loads((exported / "config.json").read_text(encoding="utf-8"))
    assert isinstance(config, dict) and "model_type" in config, config
    assert (exported / "model.safetensors").stat().st_size > 64 * 10 * 4
    # the lens runs Export… for its function and target, and asks before replacing
    assert r["lens_output_default"] == "exported/classify-hf"
    assert "is not empty" in r["replace_dialog"], r["replace_dialog"]
    assert "exported classify for hf" in r["lens_export_message"], r["lens_export_message"]
    assert (exported / "model.safetensors").is_file()
    # Restart server: a second server, which answers; Show server log shows both starts
    assert "restarting the server" in r["log_text"] and "the server is running: shapescript-lsp" in r["log_text"]
    assert server_log.read_text(errors="replace").count("Notification 'initialized' received") == 2
    # VS Code's own capabilities got the server's own answer (shipped, initialize_answer.py)
    assert "answer to initialize differs" not in server_log.read_text(errors="replace")
    assert "x: [b D] f32" in r["hover_after_restart"]
    # Explain error under cursor: the code's docs page in a Markdown preview
    assert "Preview serving-engines.md" in r["explain_tab"]
    # Go to References on the dim `D`: its two uses in the peek view
    refs = r["references"]
    assert any("w: [C D]" in x for x in refs["rows"]) and any("x: [b D]" in x for x in refs["rows"]), refs
    assert r["rename_placeholder"] == "y"
    # F2 rename of the local `y`, saved
    text = src.read_text(encoding="utf-8")
    assert "    logits = linear(x, m.w)\n    return logits\n" in text, text
    # Format Document, saved
    assert ugly.read_text(encoding="utf-8") == "dim D = 4\n\nfn f(x: [D]) -> [D]:\n    return x |> softmax(over=D)\n"
    # Export… for gguf alone (hf unticked) at q8_0, from the GGUF type pick: the file's
    # matrices are Q8_0, its norms f32, and nothing was written for hf
    assert r["gguf_targets_offered"] == {"hf": "true", "gguf": "true"}, r["gguf_targets_offered"]
    assert r["gguf_targets"] == {"hf": "false", "gguf": "true"}, r["gguf_targets"]
    assert r["gguf_output_default"] == "exported/forward-gguf"
    assert {"f32", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"} <= set(r["gguf_types"]), r["gguf_types"]
    assert "keep" not in r["gguf_types"], r["gguf_types"]  # random weights: no .gguf to keep
    assert "exported forward for gguf" in r["gguf_export_message"], r["gguf_export_message"]
    gguf_file = ws / "exported" / "forward-gguf"
    assert gguf_file.is_file(), sorted(str(p.relative_to(ws)) for p in (ws / "exported").rglob("*"))
    assert not (ws / "exported" / "forward-hf").exists()
    import gguf
    reader = gguf.GGUFReader(str(gguf_file))
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types["token_embd.weight"] == "Q8_0" and types["blk.0.attn_q.weight"] == "Q8_0", types
    assert all(q == "Q8_0" for name, q in types.items() if not name.endswith("norm.weight")), types
    assert all(types[name] == "F32" for name in types if name.endswith("norm.weight")), types
    assert reader.get_field("general.file_type").contents() == gguf.LlamaFileType.MOSTLY_Q8_0
    # no server: the notification says where it looked, and "How to install" opens the README
    assert "shapescript-lsp" in r["missing_message"] and "How to install" in r["missing_message"]
    assert str(ws_missing / ".venv" / "bin") in r["missing_message"], r["missing_message"]
    assert "Preview README.md" in r["install_tab"]
    # a crashing server: restarted once (maxRestarts 1), then left stopped
    assert "stopped 2 times within 3 minutes and was not restarted" in r["crash_message"], r["crash_message"]
    assert starts.read_text().split() == ["start", "start"]
    # the ShapeScript log channel of each window (on disk once its window is gone):
    # the trace is on where the setting says so, and only there
    logs = window_logs(user_data, {"main": ws, "crash": ws_crash})
    assert set(logs) == {"main", "crash"}, sorted(logs)
    assert "Sending request 'initialize" in logs["crash"], logs["crash"][-3000:]
    assert "Sending request" not in logs["main"], logs["main"][-3000:]
    assert "restarting the server" in logs["main"] and logs["main"].count("the server is running") == 2
    # a request that raced the restart's stop answers nothing: no error, no notification
    assert not re.search(r"Request \S+ failed", logs["main"]), logs["main"][-3000:]
    print(f"VS Code end to end: {elapsed:.1f} s in all, the UI steps {r['timings']}; "
          f"Control+. pressed {r['quick_fix_attempts']}x (light bulb: {r.get('lightbulb')}), hover tries {r.get('hover_attempts')}")
