"""A tiny Llama that has learned something: trained for a few hundred steps on story.txt
beside this file, with a byte-level BPE trained on the same story, and saved as a Hub
checkpoint is (config.json, model.safetensors, tokenizer files, generation_config.json).
Greedy decoding recites the story. `./demo.sh` and tests/test_import_trained.py import it
into examples/llama.ss.

    python examples/tiny_story/train.py OUT_DIR      (about 10 s on one core)
"""
from __future__ import annotations

import os
import sys

STORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "story.txt")
SIZE = dict(D=64, H=2, Hkv=1, F=128, L=2)  # V: the tokenizer's. Heads 32 wide: vLLM's CPU attention refuses 16
THETA = 500000.0                            # examples/llama.ss's rope theta
STEPS = 200                                 # the loss is below 0.1 after 100


def train(directory: str, steps: int = STEPS):
    """(model, tokenizer), trained on the story and saved in `directory`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    text = open(STORY, encoding="utf-8").read()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([text], trainers.BpeTrainer(
        vocab_size=384, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    ids = torch.tensor(fast.encode(text, add_special_tokens=False))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same steps every run, and fast on a shared machine (two threads contend)
    torch.manual_seed(0)
    try:
        model = LlamaForCausalLM(LlamaConfig(
            vocab_size=len(fast), hidden_size=SIZE["D"], intermediate_size=SIZE["F"],
            num_hidden_layers=SIZE["L"], num_attention_heads=SIZE["H"], num_key_value_heads=SIZE["Hkv"],
            max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": THETA},
            bos_token_id=0, eos_token_id=0, pad_token_id=0))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        window, batch = 64, 16
        for _ in range(steps):
            starts = torch.randint(0, len(ids) - window, (batch,))
            x = torch.stack([ids[s:s + window] for s in starts])
            loss = model(x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.config._attn_implementation = "eager"
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return model, fast


def dim_flags(vocab: int) -> list:
    """--dim flags that give examples/llama.ss this model's sizes."""
    return [a for k, v in dict(SIZE, V=vocab).items() for a in ("--dim", f"{k}={v}")]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    _, fast = train(sys.argv[1])
    print(" ".join(dim_flags(len(fast))))
