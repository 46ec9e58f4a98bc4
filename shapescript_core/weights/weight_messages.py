"""The weights' problems that are no diagnostic of their own (export errors and warnings:
a wrong dtype, an extra key, a file that can't be read), one constructor each. The
codes' diagnostics are one module per code: e3310.py, e3311.py, e3312.py (the weights
read at export), e3314.py, e3315.py, e3316.py (a checkpoint imported)."""
from __future__ import annotations


def shape_text(shape) -> str:
    """A tensor's shape as the messages show it, [32000 4096]."""
    return "[" + " ".join(str(s) for s in shape) + "]"


def wrong_dtype(path: str, got: str, want: str) -> str:
    return (f"`{path}` is {got} in the weights, but the model says {want}: convert the weights, "
            f"or declare the field as {got}")


def extra_key(key: str, model: str) -> str:
    return f"the weights' `{key}` is no param of `{model}`: it is left out"


def unreadable(tensor: str, file: str, why: str) -> str:
    return f"can't read `{tensor}` from {file}: {why}"


def outside_weights(file: str, folder: str, how: str) -> str:
    return (f"won't read `{file}`: {how} leads out of the weights directory `{folder}`; "
            "weights are read only from inside it")


def corrupt_file(file: str, why: str) -> str:
    return f"{file} is not a safetensors file that can be read: {why}"


def bad_init(path: str, text: str) -> str:
    return (f"`{path}`'s initializer `{text}` can't make random weights: "
            f"use ones, zeros or normal(STD)")
