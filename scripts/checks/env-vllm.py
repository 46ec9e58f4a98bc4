"""Smoke check of the vLLM environment (scripts/lock.sh before writing its lock, setup after building it)."""
import torch
import transformers
import safetensors  # noqa: F401
import vllm

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, "a CUDA torch: " + str(torch.version.cuda)
assert transformers.__version__.startswith("5.19"), transformers.__version__
print("vllm", vllm.__version__, "transformers", transformers.__version__, "torch", torch.__version__)
