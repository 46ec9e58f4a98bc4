#!/usr/bin/env bash
# Set up .venv, check the examples, and show what a diagnostic and its page look like.
set -euo pipefail

cd "$(dirname "$0")"
./scripts/setup.sh

good=(examples/llama.ss examples/gpt2.ss examples/classifier.ss)
broken=examples/broken_attention.ss

echo "\$ shapescript check ${good[*]}"
.venv/bin/shapescript check "${good[@]}"
echo "(exit status 0: no errors)"
echo

echo "\$ shapescript check --target vllm examples/llama.ss"
.venv/bin/shapescript check --target vllm examples/llama.ss
echo "(exit status 0: a serving engine can run its forward)"
echo

echo "\$ shapescript check $broken"
status=0
.venv/bin/shapescript check "$broken" || status=$?
if [ "$status" -ne 1 ]; then
    echo "demo: expected exit status 1 (one E0408) from $broken, got $status" >&2
    exit 1
fi
echo "(exit status 1, as expected: the last einsum has two axes swapped)"
echo

echo "\$ shapescript explain E0408"
.venv/bin/shapescript explain E0408
