"""The layers import only downward (docs/architecture.md): no import cycle between
modules or between layers, counting imports inside functions; a function-local import of
the project's own code only where it defers numpy (said by a comment on its line); and
the core knows nothing of LSP. Works on a plain clone: the import graph is read from the
sources here (the same reading as the shared `tools/layering.py`)."""
import ast
import os

from shapescript_core.check.graphs import components

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("shapescript_core", "shapescript_server")

# Each layer imports only the layers before it (a top-level module is a layer of its own).
LAYERS = [
    "shapescript_core", "shapescript_core.blas_threads", "shapescript_core.post_order", "shapescript_core.dtypes", "shapescript_core.explain", "shapescript_core.diagnostics",
    "shapescript_core.files", "shapescript_core.escape", "shapescript_core.imports",
    "shapescript_core.syntax", "shapescript_core.check", "shapescript_core.targets",
    "shapescript_core.settings", "shapescript_core.project_files", "shapescript_core.program_db", "shapescript_core.compile",
    "shapescript_core.arch", "shapescript_core.gguf_format", "shapescript_core.serving", "shapescript_core.export_errors", "shapescript_core.weights",
    "shapescript_core.reads", "shapescript_core.declarations", "shapescript_core.program_view", "shapescript_core.workspace", "shapescript_core.export",
    "shapescript_core.ide",
    "shapescript_core.apply_fixes", "shapescript_core.render", "shapescript_core.evaluate", "shapescript_core.cli",
    "shapescript_server",
]


def _modules() -> dict:
    out = {}
    for top in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(folder, f)
                    name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    out[name[:-9] if name.endswith(".__init__") else name] = path
    return out


def _imports(mods: dict):
    """(module, imported project module, lineno, inside a function?, the source line),
    and every third-party top-level name each module imports."""
    edges, third = [], {}
    for mod, path in mods.items():
        text = open(path, encoding="utf-8").read()
        lines = text.split("\n")
        tree = ast.parse(text)
        is_pkg = path.endswith("__init__.py")
        in_fn = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                in_fn.update(id(n) for n in ast.walk(node) if n is not node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
            else:
                continue
            for n in names:
                hit = n
                while hit and hit not in mods:
                    hit = hit.rpartition(".")[0]
                if hit and hit != mod:
                    edges.append((mod, hit, node.lineno, id(node) in in_fn, lines[node.lineno - 1]))
                elif not hit and not getattr(node, "level", 0):
                    third.setdefault(mod, set()).add(n.split(".")[0])
    return edges, third


def _cycles(graph: dict) -> list:
    """The strongly connected components with more than one member (the checker's own
    Tarjan, check/graphs.py, which finds E0207's call cycles)."""
    groups: dict = {}
    for node, comp in components(graph).items():
        groups.setdefault(comp, []).append(node)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def _layer(mod: str) -> str:
    return ".".join(mod.split(".")[:2]) if mod.startswith("shapescript_core") else "shapescript_server"


MODS = _modules()
EDGES, THIRD = _imports(MODS)


def test_no_import_cycle_between_modules():
    graph = {m: set() for m in MODS}
    for a, b, *_ in EDGES:
        graph[a].add(b)
    assert _cycles(graph) == []


def test_no_import_cycle_between_layers_and_each_imports_only_the_layers_below():
    graph: dict = {}
    for a, b, *_ in EDGES:
        if _layer(a) != _layer(b):
            graph.setdefault(_layer(a), set()).add(_layer(b))
    assert _cycles(graph) == []
    assert set(graph) | {b for bs in graph.values() for b in bs} <= set(LAYERS)
    upward = sorted((a, b) for a, bs in graph.items() for b in bs if LAYERS.index(b) > LAYERS.index(a))
    assert upward == []


def test_an_import_inside_a_function_only_defers_numpy():
    """...or, in the server's entry point alone, pygls (fast_start.py answers first), and
    in fast_start.py the parser (not loaded when it shows kept diagnostics), the
    checker (loaded only to check a burst of documents opened cold) and the server
    (pygls: loaded ahead on a thread once a keystroke typed during that check is
    published)."""
    lazy = [(MODS[a], line, text.strip()) for a, b, line, in_fn, text in EDGES
            if in_fn and "deferred: numpy" not in text
            and not (a == "shapescript_server.main" and "deferred: pygls" in text)
            and not (a == "shapescript_server.fast_start" and ("deferred: the parser" in text
                                                                or "deferred: the checker" in text
                                                                or "deferred: pygls" in text))]
    assert lazy == []


def test_the_core_imports_no_lsp_library():
    core = {m: sorted(names & {"pygls", "lsprotocol"}) for m, names in THIRD.items()
            if m.startswith("shapescript_core")}
    assert {m: n for m, n in core.items() if n} == {}


def test_the_guard_sees_a_cycle_and_an_upward_import():
    """The checks above can fail: a made-up graph with a cycle and an upward edge."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert LAYERS.index("shapescript_core.compile") < LAYERS.index("shapescript_core.export")
    assert LAYERS.index("shapescript_core.workspace") < LAYERS.index("shapescript_core.export")
