"""Smoke check of the LiteRT environment: litert_torch's export_hf, the interpreter and litert_lm import."""
import importlib.metadata as md

import torch
import transformers
from litert_torch.generative.export_hf import export  # noqa: F401
from litert_torch.generative.export_hf.model_ext import extension  # noqa: F401
from ai_edge_litert.interpreter import Interpreter  # noqa: F401
import litert_lm  # noqa: F401

assert torch.__version__.startswith("2.13.0"), torch.__version__
print("litert-torch-nightly", md.version("litert-torch-nightly"), "litert-lm-api", md.version("litert-lm-api"),
      "transformers", transformers.__version__, "torch", torch.__version__)
