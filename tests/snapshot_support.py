"""What a program gives, as text, for the snapshot tests (tests/test_snapshots.py): every
diagnostic for each way of checking it (no target, each target, vLLM split two ways), and
for each exported function the generated files of each target (hashed):

- hf: config.json, the configuration and modeling modules, the key mapping;
- vllm: the native plugin's files;
- gguf: the matched plan (architecture, hyper-parameters, every tensor's name, shape,
  kind and layout steps), what the writer writes in the header;
- litert: the generated ModelExtension.

Made without numpy or torch, so it runs wherever the checker does. `python
tests/snapshot_support.py write` rewrites the snapshots (review the change: a refactor
must leave them as they are).
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import sys

from checkout import ROOT, SHARED  # SHARED: the contract's folder, None in a plain clone
SNAPSHOTS = os.path.join(ROOT, "tests", "snapshots")
TARGETS = ("hf", "vllm", "gguf", "litert")


def programs() -> list:
    """(name, path): every example, every test program, every conformance case there is."""
    out = []
    for base, patterns in ((ROOT, ("examples/**/*.ss", "tests/programs/**/*.ss")),
                           (SHARED, ("conformance/**/*.ss",))):
        for pattern in patterns if base else ():
            for path in sorted(glob.glob(os.path.join(base, pattern), recursive=True)):
                out.append((os.path.relpath(path, base), path))
    return out


def from_contract(name: str) -> bool:
    """A program of the shared contract's conformance cases (present only beside it)."""
    return name.startswith("conformance/")


def _shown(path: str) -> str:
    for base in (SHARED, ROOT):
        if base and path.startswith(base + os.sep):
            return os.path.relpath(path, base)
    return path


def _digest(text) -> str:
    if not isinstance(text, (bytes, str)):
        text = json.dumps(text, sort_keys=True, default=repr)
    if isinstance(text, str):
        text = text.encode("utf-8")
    return hashlib.sha256(text).hexdigest()[:20]


def _diagnostics(ws, path: str) -> list:
    from shapescript_core.render import to_json

    def lines_for(p):
        f = ws.file(p)
        from shapescript_core.syntax.source import LineIndex
        return f.lines if f is not None else LineIndex("")

    out = []
    for d in ws.diagnostics(path):
        j = to_json(d, lines_for)
        j["file"] = _shown(j["file"])
        for label in j["labels"]:
            if "file" in label:
                label["file"] = _shown(label["file"])
        for fix in j["fixes"]:
            for e in fix["edits"]:
                e["file"] = _shown(e["file"])
        out.append(json.dumps(j, sort_keys=True, ensure_ascii=False))
    return out


def _generated(ws, path: str, fn: str) -> dict:
    """{target/file: digest} of what each target generates for `fn` (an error, by its text)."""
    from shapescript_core.compile.graph import CompileError, trace
    from shapescript_core.export.hf.build import build
    from shapescript_core.export.litert.extension import extension_source
    from shapescript_core.export.vllm.native import plugin_files
    try:  # the modules' places before the structure's second step (6fb1143), which made the snapshots
        from shapescript_core.export.errors import ExportError
        from shapescript_core.export.gguf import metadata
        from shapescript_core.export.gguf.gguf_plan import Departure
        from shapescript_core.export.gguf.match import match
    except ImportError:
        try:  # arch/gguf_names.py before the GGUF names had a module of their own
            from shapescript_core.gguf_format import names as metadata
        except ImportError:
            from shapescript_core.arch import gguf_names as metadata
        from shapescript_core.arch.match import match
        from shapescript_core.arch.plan import Departure
        from shapescript_core.export_errors import ExportError

    out = {}
    name = os.path.basename(path)
    try:
        art = build(ws, path, fn, "f32")
    except (ExportError, CompileError) as e:
        return {"hf/error": str(e)}
    out["hf/config.json"] = _digest(art.config)
    out["hf/configuration.py"] = _digest(art.configuration)
    out["hf/modeling.py"] = _digest(art.modeling)
    out["hf/keys"] = _digest(art.keys)
    out["hf/lm"] = str(art.lm)
    if art.lm:
        try:
            for rel, text in sorted(plugin_files(art.plan.prog, art.plan, art.names, name).items()):
                out[f"vllm/{rel}"] = _digest(text)
        except CompileError as e:
            out["vllm/error"] = str(e)
        lm = art.generator.lm
        tied = art.keys.get(lm.table) if lm is not None and lm.tied else None
        out["litert/extension.py"] = _digest(extension_source(
            stem=art.names.stem, model_type=art.config.get("model_type", ""), source=name, function=fn,
            stop_ids=[1], prefill=16, cache=64, tied_table=tied))
    try:
        plan = match(trace(getattr(ws, "program", ws), path, fn))  # (no .program before 6fb1143)
    except CompileError as e:
        out["gguf/error"] = str(e)
        return out
    if isinstance(plan, Departure):
        out["gguf/departure"] = str(plan.reason)
        return out
    out["gguf/arch"] = plan.arch
    out["gguf/hparams"] = _digest(plan.hparams)
    out["gguf/notes"] = _digest(list(plan.notes))
    # what the writer writes of each tensor: its name, where its values come from, its shape,
    # kind and layout steps (not how the plan spells the kind inside)
    out["gguf/tensors"] = _digest([(metadata.tensor_name(plan.arch, t), t.source, list(t.shape), t.kind,
                                    repr(t.steps), repr(t.parts)) for t in plan.tensors])
    return out


def snapshot(path: str) -> dict:
    """Everything the program gives, as {key: text}."""
    from shapescript_core.workspace import Workspace

    out = {}
    runs = [("check", None, 1)] + [(f"check --target {t}", t, 1) for t in TARGETS] + \
        [("check --target vllm --tensor-parallel 2", "vllm", 2)]
    for key, target, ranks in runs:
        ws = Workspace()
        ws.file(path)
        if target:
            ws.set_export_requests({path: [(None, {target})]})
        ws.set_tensor_parallel(ranks)
        out[key] = _diagnostics(ws, path)
    ws = Workspace()
    ws.file(path)
    an = ws.analyze(path)
    if an is None:
        return out
    errors = [d for d in ws.diagnostics(path) if d.severity.word == "error"]
    if errors:
        return out
    for item, _targets in ws.exported(an):
        out[f"generated {item.name}"] = _generated(ws, path, item.name)
    return out


def snapshot_file(name: str) -> str:
    return os.path.join(SNAPSHOTS, name.replace("/", "__") + ".json")


def write_all():
    os.makedirs(SNAPSHOTS, exist_ok=True)
    for name, path in programs():
        with open(snapshot_file(name), "w", encoding="utf-8") as fh:
            json.dump(snapshot(path), fh, indent=1, sort_keys=True, ensure_ascii=False)
            fh.write("\n")


if __name__ == "__main__" and sys.argv[1:] == ["write"]:
    write_all()
