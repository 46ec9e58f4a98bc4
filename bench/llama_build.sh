#!/usr/bin/env bash
# The llama-cpp-python wheel build, three ways, one after the other:
#   before:  what setup ran before the locks: `pip wheel llama-cpp-python==0.3.36` (build
#            isolation: the newest scikit-build-core; the machine's CMake and Make; CMake's
#            defaults, the multimodal mtmd library too)
#   full:    the locked source archive (locks/llama-sdist.txt) in the locked build
#            environment (locks/llama-build.txt: CMake and Ninja from PyPI), CMake's defaults
#   minimal: the same with LLAMA_CMAKE_ARGS of scripts/env_common.sh (what setup builds now:
#            the library and the CPU backend)
# Prints, for each: wall seconds, CPU seconds (user + sys of the build: steadier than the
# wall time on a shared machine) and the wheel's size.
#   bench/llama_build.sh [before|full|minimal]...     (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env_common.sh
ensure_cache_dirs

build_venv="$SHAPESCRIPT_CACHE/venv-llama-build"
locked_venv llama-build "$build_venv"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

one() {
    local variant=$1 args=""
    [ "$variant" = minimal ] && args=$LLAMA_CMAKE_ARGS
    local dir
    dir=$(mktemp -d)
    local t0=$SECONDS
    local times="$dir/time"
    if [ "$variant" = before ]; then
        /usr/bin/env time -f "%U %S" -o "$times" \
            "$PYTHON_FOR_VENVS" -m pip wheel --no-cache-dir --no-deps -w "$dir/out" "$LLAMA_PIN" >"$dir/log" 2>&1 \
            || { tail -n 20 "$dir/log" >&2; exit 1; }
    else
        PATH="$build_venv/bin:$PATH" CMAKE_ARGS="$args" /usr/bin/env time -f "%U %S" -o "$times" \
            "$build_venv/bin/python" -m pip wheel --no-cache-dir --no-deps --no-build-isolation --require-hashes \
            -w "$dir/out" -r "$LOCKS_DIR/llama-sdist.txt" >"$dir/log" 2>&1 \
            || { tail -n 20 "$dir/log" >&2; exit 1; }
    fi
    local wall=$((SECONDS - t0))
    local cpu
    cpu=$(awk '{printf "%.0f", $1 + $2}' "$times")
    printf '%-8s wall %4d s   cpu %5d s   wheel %s\n' "$variant" "$wall" "$cpu" "$(du -h "$dir"/out/*.whl | cut -f1)"
    rm -rf "$dir"
}

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(before full minimal)
echo "llama-cpp-python $(lockfile_version=$(grep -o '==[^ ]*' "$LOCKS_DIR/llama-sdist.txt"); echo "${lockfile_version#==}") on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for v in "${variants[@]}"; do one "$v"; done
