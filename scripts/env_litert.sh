#!/usr/bin/env bash
# The LiteRT environment: torch 2.13.0 (CPU), litert-torch-nightly (export_hf with ModelExtension), litert-lm-api, ai-edge-litert-nightly and transformers 5.24. `shapescript export --litert` runs its conversion step with this venv's python; the project is not installed here (the step is a standalone script, shapescript_core/export/litert/convert_main.py).
# Installed from locks/litert.txt (every package, exact version and hash; scripts/lock.sh
# re-resolves it) into $LITERT_VENV; rebuilt from scratch when the lock or the Python changes.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/env_common.sh"
ensure_cache_dirs
locked_venv litert "$LITERT_VENV"
