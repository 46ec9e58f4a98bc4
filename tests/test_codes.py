"""A module per code, as ruff keeps one per rule: every page `docs/errors/CODE.md` has
exactly one module under shapescript_core/ named by the code (lowercase, with an optional
`_suffix`: `check/codes/e0408.py`, `serving/e3304_token_axes.py`), which holds the code's
check where it can be split out, its message, help, notes and fix; and a code is written
only there. A large check may keep helper modules named by its code too, so that they
sort with it (`e3304_rules.py`): in the same folder, and writing no code string.

"Written" is a code string: a string literal that is a code (`error("E3305", …)`,
`d.code == "E0210"`) or a rendered header (`f"error[E3313]: …"`). A code named in prose
(a docstring, a comment, a command's help, "(E3307; default: …)") is a reference, not a
code string. Fixtures for a code: tests/programs/**/eXXXX_*.ss, seed_eXXXX.ss, and the
shared conformance cases whose `# expect:` lines name it (docs/environments.md)."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "shapescript_core")
PAGES = os.path.join(ROOT, "docs", "errors")

CODE = re.compile(r"[EW]\d{4}")
HEADER = re.compile(r"\b(?:error|warning)\[([EW]\d{4})\]")

# A page whose module is not named by its code: E0001 is diagnostics.internal_error, beside
# `Diagnostic` itself, because every layer reports it (the parser, the checker, the
# export checks) and diagnostics.py is the leaf below them all.
HOMES = {"E0001": "diagnostics.py"}

# Code strings outside their code's module, each for a reason:
ALLOWED = {
    # E0001's module (HOMES)
    "diagnostics.py": {"E0001"},
    # hover links the "Serving engines" page, the one that E3301's link opens
    # (diagnostics.doc_url): a docs link, not a diagnostic
    "ide/hover.py": {"E3301"},
    # the whole-file checks the Workspace split moved out of workspace.py, left to that
    # work: E0207, E0209 and W0102 are built there (their modules in check/codes/ say so
    # and take the builders next), and a missing import (E0210) hides the unknown names
    # (E0201, E0202, E0205) it may define
    "check/whole_file.py": {"E0201", "E0202", "E0205", "E0207", "E0209", "E0210", "W0102"},
}


def pages() -> list:
    return sorted(n[:-3] for n in os.listdir(PAGES) if n.endswith(".md") and CODE.fullmatch(n[:-3]))


def core_modules() -> dict:
    """Path relative to shapescript_core/ (with `/`) -> source."""
    out = {}
    for folder, dirs, files in os.walk(CORE):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                out[os.path.relpath(path, CORE).replace(os.sep, "/")] = open(path, encoding="utf-8").read()
    return out


def named_code(path: str):
    """The code a module is named by (`e3304_token_axes.py` -> E3304), or None."""
    m = re.fullmatch(r"([ew]\d{4})(?:_\w+)?\.py", os.path.basename(path))
    return m.group(1).upper() if m else None


def code_strings(source: str) -> set:
    """The codes a module writes as code strings (docstrings are prose, comments are not
    strings)."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if CODE.fullmatch(node.value):
                out.add(node.value)
            out.update(HEADER.findall(node.value))
    return out


def misplaced(modules: dict, allowed: dict) -> dict:
    """{path: codes} of the code strings outside their code's module and the allow-list."""
    out = {}
    for path, source in modules.items():
        stray = {c for c in code_strings(source) if c != named_code(path)} - allowed.get(path, set())
        if stray:
            out[path] = sorted(stray)
    return out


def named(modules: dict) -> dict:
    """code -> the modules named by it."""
    out: dict = {}
    for path in modules:
        code = named_code(path)
        if code is not None:
            out.setdefault(code, []).append(path)
    return out


def homes(modules: dict) -> dict:
    """code -> the modules named by it that write it (all of them when none does: a
    module whose check lives elsewhere for now says so in prose); more than one is a
    mistake, the others are its helpers."""
    out = {}
    for code, paths in named(modules).items():
        out[code] = [p for p in paths if code in code_strings(modules[p])] or paths
    return out


MODULES = core_modules()


def test_each_page_has_one_module_named_by_its_code_which_mentions_it():
    found = homes(MODULES)
    for code, path in HOMES.items():
        found.setdefault(code, []).append(path)
    assert {c: sorted(ps) for c, ps in found.items() if len(ps) != 1} == {}
    assert sorted(found) == pages(), "a page without a module, or a module without a page"
    assert [c for c, (p,) in found.items() if c not in MODULES[p]] == []


def test_a_codes_helper_modules_sit_beside_its_module():
    spread = {c: sorted(ps) for c, ps in named(MODULES).items() if len({os.path.dirname(p) for p in ps}) > 1}
    assert spread == {}


def test_a_code_is_written_only_in_its_own_module():
    assert misplaced(MODULES, ALLOWED) == {}


def test_the_allow_list_holds_only_what_is_still_there():
    stale = {p: sorted(cs - code_strings(MODULES[p])) if p in MODULES else "no such module"
             for p, cs in ALLOWED.items()}
    assert {p: s for p, s in stale.items() if s} == {}


def test_the_guard_sees_a_code_built_outside_its_module():
    """The checks above can fail: made-up modules, one code in its own module, one
    elsewhere, one in a header, and prose that is no code string."""
    src = ('"""E0202 in a docstring is prose."""\n'
           'def f(span):\n'
           '    """E0203 neither."""\n'
           '    # E0204 in a comment\n'
           '    d = error("E0201", "`x` isn\'t defined", span)\n'
           '    help = "see E0205 (prose)"\n'
           '    return d, f"error[E3313]: {help}"\n')
    assert code_strings(src) == {"E0201", "E3313"}
    made_up = {"check/codes/e0201.py": 'error("E0201", "m", s)\n',
               "check/function.py": 'error("E0201", "m", s)\n',
               "serving/e3313_gguf.py": 'x = f"error[E3313]: {r}"\n',
               "export/gguf/writer.py": 'x = f"error[E3313]: {r}"\n'}
    assert misplaced(made_up, {}) == {"check/function.py": ["E0201"], "export/gguf/writer.py": ["E3313"]}
    assert misplaced(made_up, {"check/function.py": {"E0201"}}) == {"export/gguf/writer.py": ["E3313"]}
    assert homes({"serving/e3304_token_axes.py": 'error("E3304", m, s)\n', "serving/e3304_rules.py": "",
                  "serving/entry.py": ""}) == {"E3304": ["serving/e3304_token_axes.py"]}
    assert homes({"serving/e3304_a.py": 'x = "E3304"\n', "serving/e3304_b.py": 'x = "E3304"\n'}) == {
        "E3304": ["serving/e3304_a.py", "serving/e3304_b.py"]}
    assert homes({"check/codes/e0207.py": '"""E0207: checked elsewhere."""\n'}) == {"E0207": ["check/codes/e0207.py"]}
    assert named_code("weights/e3315.py") == "E3315" and named_code("check/codes/w0101.py") == "W0101"
    assert named_code("check/codes/similar.py") is None and named_code("serving/e3304values.py") is None
