"""Compile one function of a ShapeScript program to PyTorch and run it.

`Program(src)` checks a source text once (it must have no errors). `program.compile(fn)`
exports one of its functions with the Hugging Face target's `build()`, writes the two
generated files into a fresh package directory, imports it under a unique package name
(the modeling file imports `.configuration_<stem>`), and instantiates `<Root>Model(config)`.
`Compiled.load(params)` copies tensors into its parameters through the export's key map
(`Artifact.keys`, param path -> state_dict key) and `Compiled(inputs)` calls `forward`.

`random_tensors` makes inputs and params from the checked types: size variables take
the sizes in `SIZES`, all different from each other and from the dims the test programs
declare, so that a wrong permutation or a wrong axis cannot pass by accident.
"""
from __future__ import annotations

import atexit
import importlib
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

from shapescript_core.check.types import TensorT
from shapescript_core.diagnostics import Severity
from shapescript_core.export.hf.build import build
from shapescript_core.workspace import Workspace

# the runtime sizes of size variables, and the dims of the test programs: all different
SIZES = {"b": 2, "n": 5, "m": 7, "s": 13, "t": 17}
DIMS = """
dim Hkv = 3
dim G = 4
dim H = Hkv * G
dim Dh = 6
dim D = 8
dim Dv = 9
dim V = 10
dim F = 11
"""
ATOL = 1e-5

_packages = itertools.count()
_root = None


def _package_root() -> Path:
    """One temporary directory on sys.path for every package these tests write."""
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="shapescript-compiled-"))
        atexit.register(shutil.rmtree, _root, True)
        sys.path.insert(0, str(_root))
    return _root


class Program:
    """A checked source text whose functions compile one at a time."""

    def __init__(self, src: str, name: str = "case.ss"):
        self.path = f"/tmp/shapescript-compile-tests/{next(_packages)}/{name}"
        self.ws = Workspace()
        self.ws.set_text(self.path, src)
        f = self.ws.file(self.path)
        errors = []
        for d in self.ws.diagnostics(self.path):
            if d.severity == Severity.ERROR:
                line = f.lines.line_of(d.span.abs_start)
                errors.append(f"line {line + 1}: {d.code} {d.message}\n    {src.split(chr(10))[line]}")
        if errors:
            raise AssertionError("the test program does not check:\n" + "\n".join(errors))

    def compile(self, fn: str) -> "Compiled":
        return Compiled(build(self.ws, self.path, fn), fn)


class Compiled:
    def __init__(self, art, fn: str):
        import torch
        self.art = art
        self.fn = fn
        pkg = f"shapescript_compiled_{next(_packages)}"
        d = _package_root() / pkg
        d.mkdir()
        (d / "__init__.py").write_text("")
        (d / f"{art.names.modeling}.py").write_text(art.modeling)
        (d / f"{art.names.configuration}.py").write_text(art.configuration)
        importlib.invalidate_caches()
        self.module = importlib.import_module(f"{pkg}.{art.names.modeling}")
        config_module = importlib.import_module(f"{pkg}.{art.names.configuration}")
        config = getattr(config_module, art.names.config)()
        torch.manual_seed(0)
        self.model = getattr(self.module, art.names.base)(config).eval()
        prog = art.plan.prog
        self.prog = prog
        self.params = [(name, t) for name, t, _ in prog.entry.params[1 if prog.entry.model_param else 0:]]

    @property
    def source(self) -> str:
        """The generated modeling file (shown when a comparison fails)."""
        return self.art.modeling

    def load(self, tensors: dict):
        """Copy {"m." + param path: tensor} into the model through the export's key map; every
        state_dict entry must be set, and every tensor must land somewhere."""
        sd = {}
        for path, key in self.art.keys.items():
            if key is not None:
                sd[key] = tensors[f"m.{path}"]
        missing, unexpected = self.model.load_state_dict(sd, strict=False)
        assert not missing and not unexpected, (missing, unexpected)
        return self

    def __call__(self, inputs: dict):
        import torch
        with torch.no_grad():
            return self.model(*[inputs[name] for name, _ in self.params])

    # ------------------------------------------------------------ random tensors
    def shape(self, t: TensorT) -> tuple:
        out = []
        for a in t.axes:
            v = a.size.evaluate({**self.prog.env.dims.values, **SIZES})
            if v is None or v.denominator != 1:
                raise AssertionError(f"no test size for the axis `{a.name}`: add its variable to SIZES")
            out.append(int(v))
        return tuple(out)

    def random(self, t: TensorT, g):
        import torch
        shape = self.shape(t)
        dt = t.dtype.name
        if dt == "Index":
            return torch.randint(0, self.prog.value_of(t.dtype.index), shape, generator=g)
        if dt == "bool":
            return torch.rand(shape, generator=g) < 0.6
        if dt in ("i64", "i32"):
            return torch.randint(0, 40, shape, generator=g, dtype=torch.int64 if dt == "i64" else torch.int32)
        x = torch.randn(shape, generator=g)
        return x.to({"f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}.get(dt, torch.float32))

    def random_tensors(self, seed: int = 0) -> dict:
        """Inputs by parameter name and params by "m." + path, seeded."""
        import torch
        from shapescript_core.check.types import ModelT, StackT
        g = torch.Generator().manual_seed(seed)
        out = {}
        for name, t in self.params:
            if isinstance(t, TensorT):
                out[name] = self.random(t, g)

        def walk(model, prefix):
            for fname, f in self.prog.model(model).fields.items():
                p = f"{prefix}{fname}"
                if isinstance(f.type, ModelT):
                    walk(f.type.name, p + ".")
                elif isinstance(f.type, StackT):
                    for i in range(self.prog.value_of(f.type.count)):
                        walk(f.type.model, f"{p}.{i}.")
                else:
                    out[p] = self.random(f.type, g)
        walk(self.art.plan.root, "m.")
        return out


def assert_matches(compiled: Compiled, reference, seed: int = 0, atol: float = ATOL):
    """Run the compiled function and `reference(tensors)` (plain torch on the same inputs
    and params) on random tensors; they must agree in shape, dtype and value."""
    import torch
    t = compiled.random_tensors(seed)
    compiled.load(t)
    got = compiled(t)
    with torch.no_grad():
        want = reference(dict(t))
    where = f"`{compiled.fn}`, generated code:\n{_method(compiled.source)}"
    assert tuple(got.shape) == tuple(want.shape), f"shape {tuple(got.shape)}, want {tuple(want.shape)} in {where}"
    assert got.dtype == want.dtype, f"dtype {got.dtype}, want {want.dtype} in {where}"
    if got.dtype.is_floating_point:
        err = (got - want).abs().max().item() if got.numel() else 0.0
        assert torch.allclose(got, want, atol=atol, rtol=0), f"max error {err} in {where}"
    else:
        assert torch.equal(got, want), f"values differ in {where}"


def _method(source: str) -> str:
    """The generated forward method, for failure messages."""
    i = source.find("    def forward(")
    return source[i:] if i >= 0 else source


def case_source(name: str, signature: str, body: str) -> str:
    """One exported test function: `signature` is `x: [b n D], y: [D] -> [b n D]` (the
    model parameter `m: M` comes first), `body` its statements, the last one returned."""
    params, ret = signature.rsplit("->", 1)
    lines = [line.strip() for line in body.strip().split("\n")]
    stmts = [f"    {line}" for line in lines[:-1]] + [f"    return {lines[-1]}"]
    sep = ", " if params.strip() else ""
    return "\n".join([f"@export(hf)", f"fn {name}(m: M{sep}{params.strip()}) -> {ret.strip()}:"] + stmts) + "\n"


def program_of(header: str, cases) -> Program:
    """The header (dims, `model M`) and one function per case, named `t_<case id>`."""
    import textwrap
    parts = [textwrap.dedent(header).strip() + "\n"]
    for c in cases:
        parts.append(case_source(fn_name(c[0]), c[1], c[2]))
    return Program("\n\n".join(parts))


def fn_name(case_id: str) -> str:
    return "t_" + "".join(ch if ch.isalnum() else "_" for ch in case_id)
