#!/usr/bin/env bash
# ./demo.sh from a cold start, as on a fresh machine: a fresh clone of this checkout's HEAD,
# an empty SHAPESCRIPT_CACHE, no pip or npm download cache (what the machine's image holds,
# Python, the local torch wheel and Debian's packages, stays). Prints the seconds from the
# start to the demo's first result (the greedy continuation of its --hf export in
# transformers) and to its end, each environment's build time (from setup's lines) and the
# disk each one takes. Then, warm: the same demo again, and `scripts/setup.sh` alone.
#   bench/cold_start.sh [WORK_DIR]     (default: a new folder under /tmp; removed at the end
#                                       unless KEEP=1)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/shapescript-cold.XXXXXX)}"
mkdir -p "$work"
git clone -q "$src" "$work/clone"
export SHAPESCRIPT_CACHE="$work/cache" PIP_NO_CACHE_DIR=1 npm_config_cache="$work/npm-cache"
cd "$work/clone"

stamp() {   # prefix each line with the seconds since $t0
    local t0=$1
    while IFS= read -r line; do printf '%5d s  %s\n' "$((SECONDS - t0))" "$line"; done
}

run_demo() {
    local label=$1 log="$work/demo-$1.log" t0=$SECONDS
    ./demo.sh 2>&1 | stamp "$t0" >"$log" || { tail -n 30 "$log"; echo "cold_start: the $label demo failed" >&2; exit 1; }
    local first
    first=$(grep -m1 "greedy continuation:" "$log" | awk '{print $1}')
    printf '%-5s demo: first result after %4s s, done after %4d s\n' "$label" "$first" "$((SECONDS - t0))"
}

run_demo cold
echo "cold  setup steps (from out/setup.log and the demo's own):"
grep -h "ready in\|built llama" "$work/demo-cold.log" out/setup.log | sed 's/^/        /'
run_demo warm
t0=$SECONDS
scripts/setup.sh 2>/dev/null
echo "warm  scripts/setup.sh: $((SECONDS - t0)) s"
echo "disk:"
du -sh .venv "$SHAPESCRIPT_CACHE"/venv-*/ "$SHAPESCRIPT_CACHE"/wheels "$SHAPESCRIPT_CACHE"/vscode 2>/dev/null | sed 's/^/        /'
du -sh --total .venv "$SHAPESCRIPT_CACHE" 2>/dev/null | tail -n 1 | sed 's/^/        /'
[ "${KEEP:-}" = 1 ] || rm -rf "$work"
