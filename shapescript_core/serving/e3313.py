"""The E3313 headline (ERRORS.md), in one place."""
from __future__ import annotations


def e3313(reason: str) -> str:
    return f"no llama.cpp architecture runs this model: {reason}"


E3313_HELP = ("Make the model one of llama.cpp's architectures (llama, qwen2, qwen3, gpt2, gemma2, gemma3), or export it "
              "with --hf or --vllm, which run any model the checker accepts.")
