"""The `shapescript` command line: check, explain, fmt, export.

Exit statuses (docs/command-line.md): 0 nothing wrong (warnings allowed), 1 errors
(diagnostics, or an export that failed), 2 a usage error (bad arguments, a path that
can't be read, a missing library), 130 interrupted.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import sys

from . import explain as explain_mod
from .blas_threads import one_thread
from .diagnostics import Severity
from .export.cli import run_export_command
from .export.request import unknown_dims
from .apply_fixes import apply_edits, safe_fix_edits
from .ide.format import format_markdown, format_text
from .check.env import dim_value_problem
from .export.request import find_settings
from .export.writers import DTYPES
from .files import Access, ReadRefused, read_bytes, shown
from .project_files import PathError, files_to_check
from .render import render_github, render_human, to_json_line
from .syntax.source import LineIndex
from .targets import TARGETS
from .workspace import Workspace


class UsageError(Exception):
    pass


_DIGITS = re.compile(r"[0-9]{1,30}")  # ASCII digits only (int() takes `²`-like digits, we don't)


def _parse_dims(values) -> dict:
    out = {}
    for v in values or []:
        name, eq, num = v.partition("=")
        num = num.strip()
        if not eq or not name.isidentifier() or not _DIGITS.fullmatch(num):
            raise UsageError(f"--dim takes NAME=VALUE with a positive integer, got `{shown(v)[:80]}`")
        problem = dim_value_problem(int(num))
        if problem:
            raise UsageError(f"--dim {name} {problem}, got {num}")
        out[name] = int(num)
    return out


def _access(paths) -> Access:
    """What the CLI may read: anywhere, up to the size limit of the nearest settings."""
    cfg, _ = find_settings(paths[0]) if paths else (None, None)
    return Access(cfg.max_file_size) if cfg is not None and cfg.max_file_size else Access()


def _read_text(ws: Workspace, p: str) -> str:
    """A file's text (its bytes gone before it is parsed)."""
    try:
        data = read_bytes(p, ws.access)  # a regular file, bounded: never a FIFO or a device
    except ReadRefused as e:
        raise UsageError(str(e))
    try:
        return data.decode("utf-8-sig")  # a byte order mark is no text
    except UnicodeDecodeError as e:
        raise UsageError(f"can't read `{p}`: it isn't UTF-8 ({e.reason} at byte {e.start})")


def _load(ws: Workspace, paths) -> list:
    loaded = []
    for p in paths:
        ws.set_text(p, _read_text(ws, p))
        loaded.append(ws.norm(p))
    return loaded


def _write_fixed(path: str, text: str):
    """Write a fixed source back; a file that can't be written is a usage error."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise UsageError(f"can't write the fixes to `{os.path.relpath(path)}`: "
                         f"{(e.strerror or str(e)).lower()} (the file is left as it was)")


def _lines_for(ws: Workspace):
    def lines(path):
        f = ws.file(path)
        return f.lines if f is not None else LineIndex("")
    return lines


FORMATS = ("human", "json", "github")


def _print(ws: Workspace, diags: list, fmt: str):
    lines = _lines_for(ws)
    order = sorted(diags, key=lambda d: (d.path, d.span.abs_start, d.code))
    for d in order:
        if fmt == "json":
            print(to_json_line(d, lines))
        elif fmt == "github":
            print(render_github(d, lines))
        else:
            print(render_human(d, lines))
            print()
    if fmt == "human" and diags:
        ne = sum(1 for d in diags if d.severity == Severity.ERROR)
        nw = sum(1 for d in diags if d.severity == Severity.WARNING)
        parts = []
        if ne:
            parts.append(f"{ne} error{'s' if ne != 1 else ''}")
        if nw:
            parts.append(f"{nw} warning{'s' if nw != 1 else ''}")
        print(", ".join(parts), file=sys.stderr)


def _requests(args, paths) -> dict:
    targets = set(args.target or [])
    if args.fn and not targets:
        targets = set(TARGETS)
    if not targets:
        return {}
    return {p: [(args.fn, targets)] for p in paths}


def _tensor_parallel(args, paths) -> int:
    """--tensor-parallel, else the nearest settings' `[export.vllm] tensor_parallel`."""
    n = args.tensor_parallel
    if n is None:
        cfg, _ = find_settings(paths[0]) if paths else (None, None)
        n = cfg.export.get("tensor_parallel", 1) if cfg is not None else 1
    if n < 1:
        raise UsageError(f"--tensor-parallel takes a number of ranks (1 or more), got `{n}`")
    return n


def _require_fn(ws: Workspace, paths, name: str):
    for p in paths:
        f = ws.file(p)
        if f is None or not any(it.kind in ("fn", "broken") and it.name == name for it in f.items):
            raise UsageError(f"`{name}` isn't a function in {os.path.relpath(p)}")


def _require_dims(ws: Workspace, paths, dims: dict):
    bad = unknown_dims(ws, paths, list(dims))
    if bad:
        raise UsageError(bad)


def cmd_check(args) -> int:
    dims = _parse_dims(args.dim)
    try:
        files, problems = files_to_check(args.paths)
    except PathError as e:
        raise UsageError(str(e))
    for problem in problems:
        print(f"shapescript: warning: {problem}", file=sys.stderr)
    if not files:
        where = ", ".join(f"`{p}`" for p in args.paths) if args.paths else f"`{os.getcwd()}` (the project)"
        print(f"shapescript: no .ss files in {where}", file=sys.stderr)
        return 0
    ws = Workspace(dims, _access(files))
    paths = _load(ws, files)
    ws.set_export_requests(_requests(args, paths))  # before anything analyses the files
    ws.set_tensor_parallel(_tensor_parallel(args, paths))
    _require_dims(ws, paths, dims)
    if args.fn:
        _require_fn(ws, paths, args.fn)
    if args.fix:
        for _ in range(5):  # fixes can uncover others; a few rounds at most
            diags = [d for p in paths for d in ws.diagnostics(p)]
            edits = safe_fix_edits(diags)
            if not edits:
                break
            for path, es in edits.items():
                f = ws.file(path)
                if f is None:
                    continue
                new = apply_edits(f.text, es)
                _write_fixed(path, new)
                ws.set_text(path, new)
                print(f"fixed {os.path.relpath(path)} ({len(es)} edit{'s' if len(es) != 1 else ''})",
                      file=sys.stderr)
    diags = [d for p in paths for d in ws.diagnostics(p)]
    _print(ws, diags, args.format)
    return 1 if any(d.severity == Severity.ERROR for d in diags) else 0


def cmd_explain(args) -> int:
    text = explain_mod.page(args.code)
    if text is None:
        print(f"shapescript: no page for `{args.code}`; codes are like E0408", file=sys.stderr)
        return 2
    print(text.rstrip())
    return 0


def cmd_export(args) -> int:
    targets = [t for t in TARGETS if getattr(args, t)]
    if len(targets) != 1:
        raise UsageError("export takes exactly one of --hf, --vllm, --gguf, --litert")
    dims = _parse_dims(args.dim)
    ws = Workspace(dims, _access([args.file]))
    paths = _load(ws, [args.file])
    if args.fn:
        _require_fn(ws, paths, args.fn)
    return run_export_command(ws, paths[0], targets[0], args, dims, UsageError,
                              lambda diags: _print(ws, diags, "human"))


class _Version(argparse.Action):
    """`--version`: the installed distribution's version (looked up only when asked)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        # deferred: importlib.metadata (email, zipfile, ...) is 0.05-0.1 s of a cold start
        # that every command would pay for this one option (docs/importing-weights.md, Speed)
        import importlib.metadata
        try:
            v = importlib.metadata.version("shapescript")
        except importlib.metadata.PackageNotFoundError:  # a checkout run without installing it
            v = "(not installed)"
        print(f"shapescript {v}")
        parser.exit(0)


def cmd_fmt(args) -> int:
    """Format files in place (`--check`: only say which would change, exit 1 if any)."""
    try:  # the paths as `check` takes them; a Markdown file named: its code blocks
        files, problems = files_to_check(args.paths)
    except PathError as e:
        raise UsageError(str(e))
    for problem in problems:
        print(f"shapescript: warning: {problem}", file=sys.stderr)
    changed = unchanged = failed = 0
    access = _access(files)
    for p in files:
        shown = os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p
        try:  # as `check` reads: a regular file, bounded (never a FIFO or a device)
            text = read_bytes(p, access).decode("utf-8")
        except ReadRefused as e:
            print(f"shapescript: {e}", file=sys.stderr)
            failed += 1
            continue
        except UnicodeDecodeError as e:
            print(f"shapescript: can't read `{p}`: {e}", file=sys.stderr)
            failed += 1
            continue
        new = format_markdown(text) if p.endswith(".md") else format_text(text)
        if "\r\n" in text:  # keep the file's line breaks
            new = new.replace("\n", "\r\n")
        if new == text:
            unchanged += 1
            continue
        changed += 1
        if args.check:
            print(f"would reformat {shown}")
            continue
        tmp = f"{p}.shapescript-fmt-{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write(new)
            os.replace(tmp, p)  # a reader never sees a half-written file
        except OSError as e:
            if os.path.exists(tmp):
                os.unlink(tmp)
            print(f"shapescript: can't write `{p}`: {e.strerror or e}", file=sys.stderr)
            failed += 1
            continue
        print(f"formatted {shown}", file=sys.stderr)
    verb = "would be reformatted" if args.check else "reformatted"
    print(f"{changed} file{'s' if changed != 1 else ''} {verb}, {unchanged} left unchanged", file=sys.stderr)
    if failed:
        return 2
    return 1 if args.check and changed else 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="shapescript", description="ShapeScript checker and exporter",
                                 epilog="exit status: 0 no errors, 1 errors, 2 usage error")
    ap.add_argument("--version", action=_Version)
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("check", help="check files and folders and print diagnostics",
                       description="Check .ss files: each file named, every .ss file below each folder "
                                   "named (skipping what `exclude` in shapescript.toml names); with no "
                                   "path, the project of the current folder (the nearest folder "
                                   "holding a shapescript.toml, else the current folder).",
                       epilog="exit status: 0 no errors (warnings allowed), 1 errors, 2 usage error")
    c.add_argument("paths", nargs="*", metavar="PATH", help="a .ss file or a folder (default: the project)")
    c.add_argument("--format", choices=FORMATS, default="human",
                   help="human (rustc's layout), json (one object per line), github (GitHub Actions "
                        "annotations)")
    c.add_argument("--target", action="append", choices=TARGETS, help="run a target's export checks")
    c.add_argument("--fn", help="the function the export checks run on")
    c.add_argument("--fix", action="store_true", help="apply the safe fixes")
    c.add_argument("--dim", action="append", metavar="NAME=VALUE", help="override a dim's value")
    c.add_argument("--tensor-parallel", type=int, default=None, metavar="N",
                   help="with --target vllm: check that vLLM can split the model N ways (E3307; default: "
                        "the settings' [export.vllm] tensor_parallel)")
    c.set_defaults(run=cmd_check)
    e = sub.add_parser("explain", help="print a code's explanation")
    e.add_argument("code")
    e.set_defaults(run=cmd_explain)
    f = sub.add_parser("fmt", help="format files in the canonical layout",
                       description="Format .ss files in place (paths as check takes them: folders "
                                   "stand for the .ss files below them, no path for the project), and "
                                   "the ```shapescript code blocks of .md files named. Only whitespace "
                                   "changes.")
    f.add_argument("paths", nargs="*", metavar="PATH")
    f.add_argument("--check", action="store_true",
                   help="change nothing; list the files that would change and exit 1 if there are any")
    f.set_defaults(run=cmd_fmt)
    x = sub.add_parser("export", help="export a function for a serving engine",
                       description="Check a function for a target and write it: a Hugging Face "
                                   "model directory (--hf, --vllm), one .gguf file (--gguf), or a "
                                   "LiteRT model.tflite and model.litertlm (--litert).")
    x.add_argument("file", help="the .ss file to export from")
    x.add_argument("--hf", action="store_true", help="write a Hugging Face model directory")
    x.add_argument("--vllm", action="store_true",
                   help="write the Hugging Face directory made to run in vLLM (with a README saying how)")
    x.add_argument("--gguf", action="store_true", help="write one .gguf file that llama.cpp runs")
    x.add_argument("--litert", action="store_true",
                   help="write a LiteRT model.tflite (and model.litertlm with a tokenizer) through "
                        "LiteRT-Torch's export_hf (needs its environment: scripts/env_litert.sh)")
    x.add_argument("--fn", help="the function to export (default: the one marked @export for the "
                                "target, else `forward`)")
    x.add_argument("--out", "-o", metavar="PATH",
                   help="where to write (default: the settings' [export] output, else "
                        "<file stem>-<target> beside the source, <stem>.gguf for gguf)")
    x.add_argument("--dim", action="append", metavar="NAME=VALUE",
                   help="give a dim a value, overriding the source (repeatable)")
    x.add_argument("--weights", metavar="PATH",
                   help="the weights: a .safetensors file, a directory with model.safetensors, a sharded "
                        "model.safetensors.index.json (keys: the param paths, layers.3.attn.wq, or a Hugging "
                        "Face checkpoint's names, matched by role), or a .gguf file")
    x.add_argument("--weights-map", metavar="FILE",
                   help="a TOML file mapping param paths to the checkpoint's keys, for a checkpoint "
                        "of an architecture the importer doesn't know (docs/importing-weights.md)")
    x.add_argument("--random-weights", action="store_true",
                   help="fill each param from its initializer (ones, zeros, normal(STD)) instead of weights")
    x.add_argument("--tensor-parallel", type=int, default=None, metavar="N",
                   help="--vllm: refuse a model vLLM can't split N ways (E3307; default: the settings' "
                        "[export.vllm] tensor_parallel)")
    x.add_argument("--seed", type=int, default=None, metavar="N",
                   help="the seed of --random-weights (default 0): the same seed gives the same weights")
    x.add_argument("--dtype", type=str.lower, choices=DTYPES["gguf"], default=None, metavar="DTYPE",
                   help="the dtype the float weights are stored in (default f32); --gguf also takes llama.cpp's "
                        "quantized types, as llama-quantize names them: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, "
                        "q3_k_s/m/l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k")
    x.add_argument("--force", action="store_true", help="replace the output if it exists")
    x.add_argument("--tokenizer", metavar="DIR",
                   help="a Hugging Face tokenizer directory to ship with the export")
    x.add_argument("--prefill-length", type=int, default=None, metavar="N",
                   help="--litert: the tokens one prefill call takes (default 128, at most the cache length)")
    x.add_argument("--cache-length", type=int, default=None, metavar="N",
                   help="--litert: the KV cache's length, the longest context (default 1024; at most a "
                        "learned position table's size)")
    x.add_argument("--quantize", choices=("none", "int8"), default=None,
                   help="--litert: int8 weights (dynamic int8; default none: float32)")
    x.add_argument("--split-cache", action="store_true", default=None,
                   help="--litert: export_hf's split-cache mode (the NPU path): embedder.tflite, "
                        "auxiliary.tflite (RoPE, mask, cache update) and model.tflite")
    x.set_defaults(run=cmd_export)
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code not in (0, None) else 0
    if not getattr(args, "run", None):
        ap.print_help(sys.stderr)
        return 2
    try:
        return args.run(args)
    except UsageError as e:
        print(f"shapescript: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def entry():
    """The `shapescript` command (pyproject's script, and `python -m`): `main()`, its output
    flushed, then the process ends without the interpreter's teardown, which frees every
    object one at a time (the workspace, the trace, numpy's and lark's tables: about 50 ms
    after an export, measured in docs/importing-weights.md) where the kernel frees the
    process at once. Nothing on the command line's paths registers exit handlers but
    logging, which is shut down here; an exception out of `main()` ends the process the
    usual way. OpenBLAS gets one thread (`blas_threads`): no command multiplies matrices."""
    one_thread()
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader is gone (`| head`): the rest was not wanted
        pass
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    entry()
