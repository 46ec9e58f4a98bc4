"""`--dtype q4_0 | q4_k_m | q5_k_m | q6_k | …` for `--gguf`: llama.cpp's own quantizer.

The writer writes the model in f32 beside the output's temporary, then
`llama_model_quantize` (llama.cpp's C API, through llama-cpp-python) quantizes that file
into the temporary, as `llama-quantize MODEL-f32.gguf OUT.gguf Q4_K_M` does: every
tensor's type is the one llama.cpp's recipe gives it (norms stay f32, the output layer
and some attention and MLP tensors of the mixed K-quant types are kept at higher
precision) and its bytes are llama.cpp's, since llama.cpp writes them. Nothing is
re-implemented here.

`q8_0` is not routed through it: the writer quantizes it itself with gguf-py's Q8_0,
which is bit for bit llama.cpp's (ggml's reference rounding of one f16 scale and 32
int8 per block; tests/test_gguf_quantized.py compares the bytes), and llama.cpp's Q8_0
recipe keeps every matrix Q8_0: no second file, no llama-cpp-python needed.

Cancelling stops before the quantizer starts; once started, llama.cpp's call runs to its
end (it takes no callback). Its log goes to the `llama-cpp-python` logger at ERROR while
it runs (its per-tensor lines would flood the terminal); the summary says what it wrote.
"""
from __future__ import annotations

import logging
import os

from ...dtypes import QUANTIZED
from ...export_errors import ExportError

log = logging.getLogger(__name__)

# the types the writer writes itself (gguf-py's quantizer matches llama.cpp's bit for bit)
WRITTEN_HERE = ("q8_0",)
INSTALL = "pip install llama-cpp-python (llama.cpp's Python bindings; or the `quantize` extra of shapescript)"


def by_llama_cpp(dtype: str) -> bool:
    """Is `dtype` one llama.cpp's quantizer writes (a quantized type the writer doesn't)?"""
    return dtype in QUANTIZED and dtype not in WRITTEN_HERE


def require(dtype: str):
    """llama_cpp, or one ExportError naming what to install: checked before anything is written."""
    try:
        import llama_cpp  # deferred: optional, only for the quantized types llama.cpp writes
    except ImportError as e:
        raise ExportError(f"--dtype {dtype} is written by llama.cpp's own quantizer, which isn't installed "
                          f"({e}): {INSTALL}") from None
    if not hasattr(llama_cpp, "llama_model_quantize"):
        raise ExportError(f"--dtype {dtype}: the installed llama-cpp-python has no llama_model_quantize: "
                          f"{INSTALL}")
    return llama_cpp


def quantize(src: str, dst: str, dtype: str, threads: int = 0) -> None:
    """`src` (an f32 .gguf) quantized by llama.cpp into `dst` as `dtype`."""
    llama_cpp = require(dtype)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_{QUANTIZED[dtype]}")
    params.nthread = threads
    llama_log = logging.getLogger("llama-cpp-python")
    level = llama_log.level
    llama_log.setLevel(logging.ERROR)
    try:
        rc = llama_cpp.llama_model_quantize(os.fsencode(src), os.fsencode(dst), params)
    finally:
        llama_log.setLevel(level)
    if rc != 0 or not os.path.isfile(dst):
        raise ExportError(f"llama.cpp's quantizer could not write {dtype} (llama_model_quantize returned {rc})")
    log.info("llama_model_quantize wrote %s as %s", dst, dtype)
