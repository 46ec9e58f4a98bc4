#!/usr/bin/env bash
# Set up, check the examples, show what a diagnostic and its page look like, then export
# the llama (tiny, random weights) to Hugging Face and generate with it in transformers;
# then bring checkpoints in: a Qwen3 saved by transformers, and a tiny Llama trained here
# on a story, each exported with its own weights, the same output from every engine.
#
# Cold start: only .venv is built before the first result (about 1.5 minutes from its
# lock); the engines' environments (the llama-cpp-python build above all) are built by a
# full setup in the background meanwhile (its log: out/setup.log), and the demo waits for
# it only where it first runs llama.cpp.
set -euo pipefail

cd "$(dirname "$0")"
./scripts/setup.sh main
mkdir -p out
./scripts/setup.sh >out/setup.log 2>&1 &
setup_pid=$!
engines_ready() {   # wait for the background setup, once
    [ -n "$setup_pid" ] || return 0
    echo "(waiting for the engines' environments: scripts/setup.sh, log out/setup.log)"
    local t=$SECONDS
    if ! wait "$setup_pid"; then
        tail -n 30 out/setup.log >&2
        echo "demo: scripts/setup.sh failed (log: out/setup.log)" >&2
        exit 1
    fi
    setup_pid=""
    echo "(ready after $((SECONDS - t)) s more)"
}

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

# A pretrained checkpoint in: transformers' own Qwen3 (tiny, random weights, saved offline
# as a Hub checkpoint is), exported with its own weights, matched to examples/qwen3.ss by role.
ckpt=out/qwen3-checkpoint
.venv/bin/python - "$ckpt" <<'EOF'
import sys

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.utils import logging

logging.disable_progress_bar()
torch.manual_seed(0)
cfg = Qwen3Config(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
                  rope_parameters={"rope_type": "default", "rope_theta": 1e6}, tie_word_embeddings=True)
model = Qwen3ForCausalLM(cfg)
with torch.no_grad():
    for p in model.parameters():
        p.normal_(0, 0.3)
model.save_pretrained(sys.argv[1])
print(f"(a Qwen3ForCausalLM checkpoint saved with save_pretrained in {sys.argv[1]})")
EOF
# examples/qwen3.ss leaves its sizes open: the export reads them from the checkpoint
echo "\$ shapescript export examples/qwen3.ss --hf --weights $ckpt --force -o out/qwen3-hf"
.venv/bin/shapescript export examples/qwen3.ss --hf --weights "$ckpt" --force -o out/qwen3-hf
echo "\$ shapescript export examples/qwen3.ss --gguf --weights $ckpt --force -o out/qwen3.gguf"
.venv/bin/shapescript export examples/qwen3.ss --gguf --weights "$ckpt" --force -o out/qwen3.gguf
echo
engines_ready
echo "\$ python: greedy tokens from the checkpoint (transformers), its --hf export, and llama.cpp"
.venv/bin/python - "$ckpt" out/qwen3-hf out/qwen3.gguf <<'EOF'
import sys

import torch
from transformers import AutoModelForCausalLM
from transformers.utils import logging

logging.disable_progress_bar()
prompt = [1, 17, 42, 99, 5]
kw = dict(max_new_tokens=8, do_sample=False, pad_token_id=0)
runs = {}
for name, path, extra in (("transformers (the checkpoint)", sys.argv[1], {}),
                          ("transformers (our --hf export)", sys.argv[2], {"trust_remote_code": True})):
    m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **extra).eval()
    with torch.no_grad():
        runs[name] = m.generate(torch.tensor([prompt]), **kw)[0, len(prompt):].tolist()
import llama_cpp

llm = llama_cpp.Llama(model_path=sys.argv[3], n_ctx=64, verbose=False, n_threads=2,
                      type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32)
got = []
for t in llm.generate(prompt, top_k=1, temp=0.0, reset=True):
    got.append(t)
    if len(got) == 8:
        break
llm.close()
runs["llama.cpp (our --gguf export)"] = got
for name, toks in runs.items():
    print(f"{name:32} {toks}")
if len({tuple(t) for t in runs.values()}) != 1:
    sys.exit("demo: the engines disagree")
EOF

# A model that has learned something: a tiny Llama trained here (about 10 s) on
# examples/tiny_story/story.txt, saved as a Hub checkpoint with its tokenizer, exported
# into examples/llama.ss with its own weights; the same text from every engine.
story=out/tiny-story-checkpoint
echo
echo "\$ python examples/tiny_story/train.py $story"
read -ra story_dims <<<"$(.venv/bin/python examples/tiny_story/train.py "$story")"
echo "(trained; examples/llama.ss takes its sizes: ${story_dims[*]})"
echo "\$ shapescript export examples/llama.ss --hf --weights $story ${story_dims[*]} --force -o out/tiny-story-hf"
.venv/bin/shapescript export examples/llama.ss --hf --weights "$story" "${story_dims[@]}" --force -o out/tiny-story-hf
echo "\$ shapescript export examples/llama.ss --gguf --weights $story ${story_dims[*]} --force -o out/tiny-story.gguf"
.venv/bin/shapescript export examples/llama.ss --gguf --weights "$story" "${story_dims[@]}" --force -o out/tiny-story.gguf
echo
echo "\$ python: greedy text from the checkpoint (transformers), its --hf export, and llama.cpp (its own tokenizer)"
.venv/bin/python - "$story" out/tiny-story-hf out/tiny-story.gguf <<'EOF'
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging

logging.disable_progress_bar()
prompt = "Pip closed the"
runs = {}
for name, path, extra in (("transformers (the checkpoint)", sys.argv[1], {}),
                          ("transformers (our --hf export)", sys.argv[2], {"trust_remote_code": True})):
    tok = AutoTokenizer.from_pretrained(path, **extra)
    m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **extra).eval()
    ids = tok.encode(prompt, add_special_tokens=False)
    with torch.no_grad():
        out = m.generate(torch.tensor([ids]), max_new_tokens=16, do_sample=False, eos_token_id=None, pad_token_id=0)
    runs[name] = tok.decode(out[0])
import llama_cpp

llm = llama_cpp.Llama(model_path=sys.argv[3], n_ctx=64, verbose=False, n_threads=2,
                      type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32)
got = llm.tokenize(prompt.encode(), add_bos=False, special=False)
n = len(got) + 16
for t in llm.generate(got, top_k=1, temp=0.0, reset=True):
    got.append(t)
    if len(got) == n:
        break
runs["llama.cpp (our --gguf export)"] = llm.detokenize(got).decode()
llm.close()
for name, text in runs.items():
    print(f"{name:32} {text!r}")
if len(set(runs.values())) != 1:
    sys.exit("demo: the engines disagree")
EOF

# The same model quantized as llama.cpp users run it: --dtype takes llama-quantize's types
# (q8_0, q6_k, q5_k_m, q4_k_m, ...), written by llama.cpp's own quantizer (q8_0 by ours,
# bit for bit the same): a quarter of the f32 file's size, the same greedy text.
echo
echo "\$ shapescript export examples/llama.ss --gguf --dtype q8_0 --weights $story ${story_dims[*]} --force -o out/tiny-story-q8_0.gguf"
.venv/bin/shapescript export examples/llama.ss --gguf --dtype q8_0 --weights "$story" "${story_dims[@]}" --force \
    -o out/tiny-story-q8_0.gguf
.venv/bin/python - out/tiny-story.gguf out/tiny-story-q8_0.gguf <<'EOF'
import os
import sys

import llama_cpp

# llama.cpp's AMX buffer type traps on q8_0 weights on some VMs: the plain CPU kernels
# (docs/serving-engines.md, "On these machines")
default_params = llama_cpp.llama_cpp.llama_model_default_params


def plain_cpu_params():
    p = default_params()
    p.use_extra_bufts = False
    return p


llama_cpp.llama_cpp.llama_model_default_params = plain_cpu_params
texts = {}
for path in sys.argv[1:]:
    llm = llama_cpp.Llama(model_path=path, n_ctx=64, verbose=False, n_threads=2)
    got = llm.tokenize(b"Pip closed the", add_bos=False, special=False)
    n = len(got) + 16
    for t in llm.generate(got, top_k=1, temp=0.0, reset=True):
        got.append(t)
        if len(got) == n:
            break
    texts[path] = llm.detokenize(got).decode()
    llm.close()
    print(f"{os.path.basename(path):24} {os.path.getsize(path) / 1e6:6.2f} MB  llama.cpp: {texts[path]!r}")
if len(set(texts.values())) != 1:
    sys.exit("demo: the quantized file tells another story")
EOF
