#!/usr/bin/env bash
# The LiteRT environment: $SHAPESCRIPT_CACHE/venv-litert with torch 2.13.0 (CPU), then
# litert-torch-nightly (export_hf with ModelExtension; the stable litert-torch 0.10 has
# neither and imports tensorflow), litert-lm-api (the LiteRT-LM engine) and safetensors;
# ai-edge-litert-nightly (the .tflite interpreter) and transformers 5.24 come with them.
# `shapescript export --litert` runs its conversion step with this venv's python (torch and
# litert are not in the project's own environment); the project itself is not installed
# here: the step is a standalone script (shapescript_core/export/litert/convert_main.py)
# that imports only torch, transformers and litert_torch.
# Rebuilt from scratch only when its recipe (LITERT_RECIPE in env_common.sh) or the Python changes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env_common.sh"

ensure_cache_dirs
exec 7>"$SHAPESCRIPT_CACHE/.venv-litert.lock"
if ! flock -n 7; then
    step "waiting for another setup of $LITERT_VENV"
    flock 7
fi

hash=$(recipe_hash "$LITERT_RECIPE")
stamp="$LITERT_VENV/.recipe-$hash"
if [ -e "$stamp" ] && [ -e "$LITERT_VENV/$READY_MARK" ] && torch_is_pinned "$LITERT_VENV"; then
    exit 0
fi

step "building the LiteRT environment $LITERT_VENV (about 2 minutes, 2.3 GB; logs in $LOG_DIR)"
start=$SECONDS
rm -rf "$LITERT_VENV"
run_logged litert-venv "creating $LITERT_VENV" "$PYTHON_FOR_VENVS" -m venv "$LITERT_VENV"
py="$LITERT_VENV/bin/python"
"$py" -m pip install -q --upgrade pip >"$LOG_DIR/litert-pip.log" 2>&1 \
    || step "warning: could not upgrade pip in $LITERT_VENV, going on with the one there"
step "litert env: $TORCH_PIN"
run_logged litert-torch "installing $TORCH_PIN into $LITERT_VENV" \
    "$py" -m pip install -q "$TORCH_PIN"
step "litert env: $LITERT_PINS"
# shellcheck disable=SC2086  # LITERT_PINS is a list of requirements
run_logged litert-install "installing $LITERT_PINS into $LITERT_VENV" \
    "$py" -m pip install -q --pre -c "$TORCH_CONSTRAINTS" $LITERT_PINS safetensors
step "litert env: checking that litert_torch's export_hf, the interpreter and litert_lm import"
run_logged litert-check "importing litert_torch in $LITERT_VENV" "$py" -c '
import importlib.metadata as md
import torch, transformers
from litert_torch.generative.export_hf import export
from litert_torch.generative.export_hf.model_ext import extension
from ai_edge_litert.interpreter import Interpreter
import litert_lm
assert torch.__version__.startswith("2.13.0"), torch.__version__
print("litert-torch-nightly", md.version("litert-torch-nightly"), "litert-lm-api", md.version("litert-lm-api"),
      "transformers", transformers.__version__, "torch", torch.__version__)
'
touch "$stamp"
echo "$hash" >"$LITERT_VENV/$READY_MARK"
step "LiteRT environment ready in $((SECONDS - start)) s: $(grep "^litert-torch-nightly " "$LOG_DIR/litert-check.log" | tail -n 1)"
