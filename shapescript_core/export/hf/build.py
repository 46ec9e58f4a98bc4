"""Compile an exported function into the files of a Hugging Face model directory."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from dataclasses import dataclass

from ...check.types import ModelT, StackT
from ...compile.codegen import Generator
from ...compile.graph import CompileError, build_program
from ...compile.plan import make_plan, models_in_order
from ...compile.reach import Reach
from ...escape import EscapeError
from ...serving.entry import check_exported
from ...export_errors import ExportError
from ..generated import check_parses
from .config import config_json, configuration_source
from .keys import key_map
from .modeling import Names, modeling_source

log = logging.getLogger("shapescript.export.hf")


@dataclass
class Artifact:
    names: Names
    config: dict
    configuration: str
    modeling: str
    sources: dict  # file name -> text (the source and the files it imports)
    keys: dict  # param path -> state_dict key (None: stored under another key)
    lm: bool
    plan: object
    generator: object


def is_language_model(ws, path: str, fn_name: str) -> bool:
    """True when the function passes E3301 to E3305 (the serving-engine checks)."""
    an = ws.analyze(path)
    item = an.own.get(fn_name) if an is not None else None
    if item is None:
        return False
    return not check_exported(Reach(ws.program, an), item, {"vllm"})


@contextlib.contextmanager
def _deep_expressions(limit: int = 100_000):
    """Code generation follows an expression's nesting (a 1,000-term sum is valid code):
    Python 3.11 runs Python-to-Python calls without the C stack, so a higher limit is safe."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def build(ws, path: str, fn_name: str, dtype: str = "f32") -> Artifact:
    with _deep_expressions():
        return _build(ws, path, fn_name, dtype)


def _build(ws, path: str, fn_name: str, dtype: str = "f32") -> Artifact:
    path = ws.norm(path)
    try:
        prog = build_program(ws.program, path, fn_name)
        lm = is_language_model(ws, path, fn_name)
        plan = make_plan(prog, lm)
        names = Names(plan.root, models_in_order(prog, plan.root))
        gen = Generator(prog, plan, names.classes)
        source_name = os.path.basename(path)
        modeling = modeling_source(gen, names, source_name)
        cfg = config_json(gen, names, dtype, source_name)
        configuration = configuration_source(gen, names, cfg, source_name)
    except CompileError as e:
        where = f" (line {e.where[1]})" if e.where and e.where[1] else ""
        raise ExportError(f"can't compile `{fn_name}` to PyTorch{where}: {e}") from e
    except EscapeError as e:  # a value no generated file can hold (a non-finite number)
        raise ExportError(f"can't compile `{fn_name}` to PyTorch: {e}") from e
    for name, text in ((names.modeling, modeling), (names.configuration, configuration)):
        check_parses(f"{name}.py", text)
    sources = _sources(ws, path)
    keys = key_map(plan, _param_paths(prog, plan.root), lambda model, field: gen.parallel.parts((model, field)))
    return Artifact(names, cfg, configuration, modeling, sources, keys, lm, plan, gen)


def _sources(ws, path: str) -> dict:
    """The program's sources: {path relative to the project root: text} (imports.py keeps
    every import inside the root)."""
    out = {}
    base = ws.root_of(path)
    for p in [path] + ws.import_closure(path):
        f = ws.file(p)
        if f is None:
            continue
        rel = os.path.relpath(p, base)
        if rel.startswith("..") or os.path.isabs(rel):
            raise ExportError(f"internal error: the source `{p}` lies outside the project `{base}`")
        out.setdefault(rel, f.text)
    return out


def _param_paths(prog, root: str) -> list:
    out = []

    def walk(model, prefix):
        m = prog.model(model)
        for fname, f in m.fields.items():
            p = f"{prefix}.{fname}" if prefix else fname
            if isinstance(f.type, ModelT):
                walk(f.type.name, p)
            elif isinstance(f.type, StackT):
                for i in range(prog.value_of(f.type.count)):
                    walk(f.type.model, f"{p}.{i}")
            else:
                out.append(p)
    walk(root, "")
    return out
