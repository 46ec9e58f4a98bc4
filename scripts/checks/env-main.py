"""Smoke check of .venv's packages (the project is installed after its lock, editable)."""
import torch
import transformers
import safetensors  # noqa: F401
import gguf  # noqa: F401
import lark  # noqa: F401
import pygls  # noqa: F401
import pytest  # noqa: F401
import pytest_lsp  # noqa: F401

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, "a CUDA torch: " + str(torch.version.cuda)
print("transformers", transformers.__version__, "torch", torch.__version__)
