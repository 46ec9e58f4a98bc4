#!/usr/bin/env bash
# Build the llama-cpp-python wheel into the cache, only when it is missing (about 11 minutes
# on 2 cores). Prints the wheel's path on stdout. Safe to run from several setups at once.
set -euo pipefail
source "$(dirname "$0")/env_common.sh"

ensure_cache_dirs
exec 8>"$WHEELS_DIR/.build.lock"
if ! flock -n 8; then
    step "waiting for another llama-cpp-python build"
    flock 8
fi

wheel=$(llama_wheel)
if [ -z "$wheel" ]; then
    # A build started by hand (outside this lock) writes into the same folder: wait for it.
    while pid=$(pgrep -f "pip wheel .*${LLAMA_PIN}" | head -n 1) && [ -n "$pid" ]; do
        step "waiting for the llama-cpp-python build already running (pid $pid)"
        while kill -0 "$pid" 2>/dev/null; do sleep 5; done
    done
    wheel=$(llama_wheel)
fi

if [ -z "$wheel" ]; then
    step "building $LLAMA_PIN from source into $WHEELS_DIR (about 11 minutes; log $LOG_DIR/llama-wheel.log)"
    tmp=$(mktemp -d "$WHEELS_DIR/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    start=$SECONDS
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    run_logged llama-wheel "building the $LLAMA_PIN wheel" \
        "$PYTHON_FOR_VENVS" -m pip wheel --no-deps -w "$tmp" "$LLAMA_PIN"
    built=$(compgen -G "$tmp/llama_cpp_python-*.whl" | head -n 1) \
        || die "the $LLAMA_PIN build left no wheel in $tmp"
    mv "$built" "$WHEELS_DIR/"
    wheel="$WHEELS_DIR/$(basename "$built")"
    step "built $(basename "$wheel") in $((SECONDS - start)) s"
fi
echo "$wheel"
