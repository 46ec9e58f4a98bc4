"""The one dtype table: every dtype the tools name, with its spellings elsewhere.

A row gives a dtype's name as the language and the CLI write it (`f32`), whether it is a
float, its size in bytes, and its names in numpy, torch, safetensors and a GGUF file's
type. The checker, the generated PyTorch, the weights' readers and writers, the
Hugging Face config and the GGUF writer all read their names from here, so a dtype is
added in one row. No numpy or torch here: the names are strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class DType:
    name: str                 # f32: as the language, the CLI and the settings write it
    float: bool
    itemsize: int             # bytes per element
    numpy: Optional[str]      # numpy's name (bf16 has none: held as float32, stored as uint16)
    torch: Optional[str]      # torch's name, without `torch.`
    safetensors: str          # the safetensors header's name
    language: bool = False    # a dtype a ShapeScript type can name
    gguf_file_type: Optional[str] = None  # gguf.LlamaFileType member of a file stored in it


TABLE = (
    DType("f16", True, 2, "float16", "float16", "F16", True, "MOSTLY_F16"),
    DType("bf16", True, 2, None, "bfloat16", "BF16", True, "MOSTLY_BF16"),
    DType("f32", True, 4, "float32", "float32", "F32", True, "ALL_F32"),
    DType("f64", True, 8, "float64", "float64", "F64", True),
    DType("i32", False, 4, "int32", "int32", "I32", True),
    DType("i64", False, 8, "int64", "int64", "I64", True),
    DType("bool", False, 1, "bool_", "bool", "BOOL", True),
    DType("i16", False, 2, "int16", "int16", "I16"),
    DType("i8", False, 1, "int8", "int8", "I8"),
    DType("u8", False, 1, "uint8", "uint8", "U8"),
    DType("u16", False, 2, "uint16", "uint16", "U16"),
    DType("u32", False, 4, "uint32", "uint32", "U32"),
    DType("u64", False, 8, "uint64", "uint64", "U64"),
    DType("f8_e4m3", True, 1, None, "float8_e4m3fn", "F8_E4M3"),
    DType("f8_e5m2", True, 1, None, "float8_e5m2", "F8_E5M2"),
)
BY_NAME = {d.name: d for d in TABLE}

LANGUAGE_FLOATS = tuple(d.name for d in TABLE if d.language and d.float)   # f16 bf16 f32 f64
LANGUAGE_INTS = tuple(d.name for d in TABLE if d.language and not d.float and d.name != "bool")
FLOATS = LANGUAGE_FLOATS
STORED = ("f32", "f16", "bf16")   # the dtypes an export stores floats in (`--dtype`); gguf adds q8_0
# gguf's quantized file types (`--dtype`, as llama-quantize names them, lowercase): their
# gguf.LlamaFileType / llama_cpp LLAMA_FTYPE_ names. No dtype of a tensor we read.
QUANTIZED = {"q8_0": "MOSTLY_Q8_0", "q4_0": "MOSTLY_Q4_0", "q4_1": "MOSTLY_Q4_1", "q5_0": "MOSTLY_Q5_0",
             "q5_1": "MOSTLY_Q5_1", "q2_k": "MOSTLY_Q2_K", "q3_k_s": "MOSTLY_Q3_K_S", "q3_k_m": "MOSTLY_Q3_K_M",
             "q3_k_l": "MOSTLY_Q3_K_L", "q4_k_s": "MOSTLY_Q4_K_S", "q4_k_m": "MOSTLY_Q4_K_M",
             "q5_k_s": "MOSTLY_Q5_K_S", "q5_k_m": "MOSTLY_Q5_K_M", "q6_k": "MOSTLY_Q6_K"}
# a quantized type's block, (values, bytes), for the size estimate (export/sizes.py): q8_0 is
# an f16 scale and 32 int8; a K-quant mix is estimated at its main type's block
QUANT_BLOCKS = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
                "q2_k": (256, 84), "q3_k_s": (256, 110), "q3_k_m": (256, 110), "q3_k_l": (256, 110),
                "q4_k_s": (256, 144), "q4_k_m": (256, 144), "q5_k_s": (256, 176), "q5_k_m": (256, 176),
                "q6_k": (256, 210)}


def stored_dtype(source: str, requested: str) -> str:
    """The dtype a param is stored in: floats take the requested dtype (q8_0 stores
    f32 in safetensors), other dtypes keep theirs."""
    if source in FLOATS and requested in STORED:
        return requested
    if source in FLOATS:
        return "f32"
    return source


def torch_name(name: str) -> str:
    """`torch.float32` for `f32`: what generated code writes."""
    return "torch." + BY_NAME[name].torch


def from_numpy(numpy_name: str) -> Optional[str]:
    """Our name of a numpy dtype (`float32` -> `f32`), or None."""
    return next((d.name for d in TABLE if d.numpy and numpy_name in (d.numpy, d.numpy.rstrip("_"))), None)
