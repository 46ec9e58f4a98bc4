"""A cold file's complete check with the checker's hot modules compiled: how much a
compiler of unchanged Python gives (docs/language-server.md, "Complete diagnostics beside
ruff").

Copies `shapescript_core` to a temporary folder, compiles the parser, the lexer, the AST,
the checker and the analysis there with Cython (the modules as they are: no type
declarations added, annotations not enforced), and times the same cold check of a
generated 10,000-line file (`gen.py`; `Workspace.set_text` then `diagnostics`, best of
`--runs`, each in a new workspace) in a child process for each tree.

Cython is not a dependency: install it beside, for this benchmark only,
`pip install --target DIR cython`, and pass `--cython DIR`. It needs a C compiler.

    .venv/bin/python bench/compiled_candidates.py --cython DIR [--lines 10000] [--runs 5]
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# the modules a cold check spends its time in (a cProfile of the 10k-line file)
COMPILED = ["syntax/lexer.py", "syntax/parser.py", "syntax/ast.py", "syntax/names.py",
            "syntax/fast_items.py", "check/*.py", "reads.py", "workspace/declare.py",
            "workspace/analysis.py"]

_CHILD = r"""
import sys, time
sys.path[:0] = [{tree!r}, {bench!r}]
from gen import generate
import shapescript_core.syntax.parser as P
from shapescript_core.check import sizes
from shapescript_core.workspace import Workspace
text = generate({lines})
Workspace().set_text("/tmp/warm.ss", "dim D = 1\n")  # the grammar, built once per process
best = None
for _ in range({runs}):
    sizes._MEMO.clear()
    ws = Workspace()
    t0 = time.perf_counter()
    ws.set_text("/tmp/bench_compiled.ss", text)
    n = len(ws.diagnostics("/tmp/bench_compiled.ss"))
    t = time.perf_counter() - t0
    best = t if best is None else min(best, t)
print(f"{{best * 1000:.0f}} {{n}} {{P.__file__.endswith('.so')}}")
"""

_SETUP = """
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize({mods!r}, quiet=True,
      compiler_directives={{"language_level": 3, "binding": True, "annotation_typing": False}}))
"""


def cold(tree: str, lines: int, runs: int) -> tuple[float, int, bool]:
    code = _CHILD.format(tree=tree, bench=HERE, lines=lines, runs=runs)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]), out[2] == "True"


def build(cython: str, into: str) -> None:
    shutil.copytree(os.path.join(ROOT, "shapescript_core"), os.path.join(into, "shapescript_core"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    mods = sorted(m for pat in COMPILED for m in glob.glob(os.path.join(into, "shapescript_core", pat))
                  if not m.endswith("__init__.py"))
    with open(os.path.join(into, "setup_compiled.py"), "w") as f:
        f.write(_SETUP.format(mods=[os.path.relpath(m, into) for m in mods]))
    env = dict(os.environ, PYTHONPATH=cython)
    subprocess.run([sys.executable, "setup_compiled.py", "build_ext", "--inplace", "-j", str(os.cpu_count() or 1)],
                   cwd=into, env=env, check=True, capture_output=True)
    print(f"compiled {len(mods)} modules with Cython")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cython", metavar="DIR", required=True, help="where Cython was installed (pip install --target)")
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        build(args.cython, tmp)
        plain_ms, plain_n, _ = cold(ROOT, args.lines, args.runs)
        fast_ms, fast_n, compiled = cold(tmp, args.lines, args.runs)
    if not compiled or fast_n != plain_n:
        print(f"the compiled tree did not run as compiled, or its diagnostics differ ({fast_n} vs {plain_n})")
        return 1
    print(f"cold check of a {args.lines}-line file, best of {args.runs} ({plain_n} diagnostics):")
    print(f"  as Python:          {plain_ms:6.0f} ms")
    print(f"  compiled by Cython: {fast_ms:6.0f} ms  ({plain_ms / fast_ms:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
