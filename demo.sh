#!/usr/bin/env bash
# Set up, check the examples, show what a diagnostic and its page look like, then export
# the llama (tiny, random weights) to Hugging Face and generate with it in transformers.
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
echo

# Export the llama, tiny and with random weights, and load it as transformers would.
tiny=(--dim V=256 --dim D=256 --dim H=4 --dim Hkv=2 --dim F=512 --dim L=2)
out=out/llama-hf
echo "\$ shapescript export examples/llama.ss --hf ${tiny[*]} --random-weights --force -o $out"
.venv/bin/shapescript export examples/llama.ss --hf "${tiny[@]}" --random-weights --force -o "$out"
echo

echo "\$ python: AutoModelForCausalLM.from_pretrained(\"$out\", trust_remote_code=True).generate(...)"
.venv/bin/python - "$out" <<'EOF'
import sys

import torch
from transformers import AutoModelForCausalLM
from transformers.utils import logging

logging.disable_progress_bar()
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
params = sum(p.numel() for p in model.parameters())
print(f"loaded {type(model).__name__} ({params:,} parameters) from {sys.argv[1]}")
prompt = torch.tensor([[1, 17, 42, 99, 5]])
kw = dict(attention_mask=torch.ones_like(prompt), max_new_tokens=8, do_sample=False,
          pad_token_id=0)
with torch.no_grad():
    cached = model.generate(prompt, **kw)[0, prompt.shape[1]:].tolist()
    uncached = model.generate(prompt, use_cache=False, **kw)[0, prompt.shape[1]:].tolist()
print("prompt tokens:      ", prompt[0].tolist())
print("greedy continuation:", cached)
if cached != uncached:
    sys.exit(f"demo: with the KV cache {cached}, without it {uncached}")
print("(the same without the KV cache)")
EOF
