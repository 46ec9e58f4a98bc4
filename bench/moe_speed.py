"""Mixtures of experts (issue 33): the --hf export's forward against transformers' own
MixtralForCausalLM on the same weights, and its memory as E grows with K fixed.

A Mixtral of 8 experts, top 2 (D=512, F=1024, 4 heads of 128, 2 key/value heads, 4
layers, V=8192; random weights), imported by role into examples/mixtral.ss and exported
--hf. Each run is a fresh process: the model loaded, one warm-up, then the forward of a
batch (1 x 512 tokens: prefill; and 8 x 1 after a 64-token prompt: decode steps through
the cache) timed, best of 5; the resident size's peak during the prefills (sampled every
0.5 ms) above its size before them is the forward's working memory. Then E = 32 with K = 2: the export's working memory
should stay (it computes only the chosen experts), as transformers' does.

    python bench/moe_speed.py [--experts 8,32] [--dtype float32|bfloat16]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = dict(vocab_size=8192, hidden_size=512, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=128, num_experts_per_tok=2)

RUN = r'''
import json, os, sys, threading, time, torch
torch.set_num_threads(2)
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class Peak(threading.Thread):
    """The largest resident size while it runs, sampled every half millisecond."""
    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.done = rss(), False
    def run(self):
        while not self.done:
            self.peak = max(self.peak, rss())
            time.sleep(0.0005)
which, path, dtype = sys.argv[1], sys.argv[2], getattr(torch, sys.argv[3])
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(path, trust_remote_code=which == "export", dtype=dtype).eval()
g = torch.Generator().manual_seed(0)
prefill = torch.randint(0, 8192, (1, 512), generator=g)
prompt = torch.randint(0, 8192, (8, 64), generator=g)
out = {}
with torch.no_grad():
    model(prefill)  # warm-up
    base = rss()
    peak = Peak()
    peak.start()
    times = []
    for _ in range(5):
        t = time.perf_counter(); model(prefill); times.append(time.perf_counter() - t)
    peak.done = True
    peak.join()
    out["prefill_s"] = min(times)
    out["prefill_peak_mb"] = (peak.peak - base) / 2 ** 20
    past = model(prompt, use_cache=True)
    cache = getattr(past, "past_key_values", None) or getattr(past, "cache", None)
    nxt = past.logits[:, -1:].argmax(-1)
    times = []
    for _ in range(5):
        t = time.perf_counter(); step = model(nxt, past_key_values=cache, use_cache=True); times.append(time.perf_counter() - t)
        cache = getattr(step, "past_key_values", None) or getattr(step, "cache", None)
        nxt = step.logits[:, -1:].argmax(-1)
    out["decode_step_s"] = min(times)
print(json.dumps(out))
'''


def build(tmp: str, experts: int) -> tuple:
    """(transformers' checkpoint, our export) for E experts."""
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM
    torch.manual_seed(0)
    cfg = MixtralConfig(**SIZES, num_local_experts=experts, rms_norm_eps=1e-5, sliding_window=None,
                        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=False)
    model = MixtralForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.05)
    ckpt = os.path.join(tmp, f"mixtral{experts}")
    model.save_pretrained(ckpt)
    out = os.path.join(tmp, f"export{experts}")
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "shapescript"), "export",
                        os.path.join(ROOT, "examples", "mixtral.ss"), "--hf", "-o", out, "--weights", ckpt, "--force"],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    return ckpt, out


def run(which: str, path: str, dtype: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RUN)
    try:
        r = subprocess.run([sys.executable, f.name, which, path, dtype], capture_output=True, text=True, timeout=1800,
                           env={**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"})
    finally:
        os.unlink(f.name)
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--experts", default="8,32")
    ap.add_argument("--dtype", default="float32")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for e in [int(x) for x in a.experts.split(",")]:
            ckpt, out = build(tmp, e)
            theirs, ours = run("transformers", ckpt, a.dtype), run("export", out, a.dtype)
            print(f"E={e} K=2 {a.dtype}: prefill 1x512 {ours['prefill_s'] * 1e3:.1f} ms vs transformers "
                  f"{theirs['prefill_s'] * 1e3:.1f} ms ({ours['prefill_s'] / theirs['prefill_s']:.2f}x); decode step "
                  f"8x1 {ours['decode_step_s'] * 1e3:.2f} ms vs {theirs['decode_step_s'] * 1e3:.2f} ms "
                  f"({ours['decode_step_s'] / theirs['decode_step_s']:.2f}x); working memory (peak RSS over the "
                  f"loaded model) {ours['prefill_peak_mb']:.0f} MB vs {theirs['prefill_peak_mb']:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
