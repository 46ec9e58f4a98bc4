#!/usr/bin/env bash
# Build the llama-cpp-python wheel into the cache, only when it is missing: the source
# archive of locks/llama-sdist.txt (its hash checked), built without build isolation in
# $SHAPESCRIPT_CACHE/venv-llama-build (locks/llama-build.txt: scikit-build-core, CMake,
# Ninja), with LLAMA_CMAKE_ARGS (env_common.sh: the library and the CPU backend only).
# Prints the wheel's path on stdout. Safe to run from several setups at once.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/env_common.sh"

ensure_cache_dirs
exec 8>"$WHEELS_DIR/.build.lock"
if ! flock -n 8; then
    step "waiting for another llama-cpp-python build"
    flock 8
fi

wheel=$(llama_wheel)
if [ -z "$wheel" ]; then
    build_venv="$SHAPESCRIPT_CACHE/venv-llama-build"
    locked_venv llama-build "$build_venv"
    step "building $LLAMA_PIN from source into $WHEELS_DIR (about 5 minutes on 2 cores; log $LOG_DIR/llama-wheel.log)"
    tmp=$(mktemp -d "$WHEELS_DIR/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    start=$SECONDS
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    # the build venv's cmake and ninja first on PATH
    PATH="$build_venv/bin:$PATH" CMAKE_ARGS="$LLAMA_CMAKE_ARGS" run_logged llama-wheel "building the $LLAMA_PIN wheel" \
        "$build_venv/bin/python" -m pip wheel --no-deps --no-build-isolation --require-hashes \
        -w "$tmp" -r "$LOCKS_DIR/llama-sdist.txt"
    built=$(compgen -G "$tmp/llama_cpp_python-*.whl" | head -n 1) \
        || die "the $LLAMA_PIN build left no wheel in $tmp"
    dir=$(llama_wheel_dir)
    mkdir -p "$dir"
    mv "$built" "$dir/"
    wheel="$dir/$(basename "$built")"
    step "built $(basename "$wheel") in $((SECONDS - start)) s ($(du -h "$wheel" | cut -f1))"
fi
echo "$wheel"
