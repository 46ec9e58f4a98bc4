"""Each code's headline is built in one place, and reads the same for builtins and
functions."""
import os
import re
from collections import defaultdict

from support import check

# where a diagnostic is made: error("E0408", ...), ck.err("E0303", ...), warning(...),
# placed_error(prog, item, pos, stack, "E3305", ...): the code is the first string argument
MADE = re.compile(r'(?:error|err|warning)\([^()"]*?"([EW]\d{4})"')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "shapescript_core")
INTERNAL = "E0001"  # made from its constant, by diagnostics.internal_error


def test_each_code_is_built_in_one_module():
    where = defaultdict(set)
    for folder, _, files in os.walk(CORE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                for code in MADE.findall(open(path, encoding="utf-8").read()):
                    where[code].add(os.path.relpath(path, CORE))
    spread = {c: sorted(ms) for c, ms in where.items() if len(ms) > 1}
    assert spread == {}, spread
    # the scan sees every code there is: each code with a page is made somewhere it looks
    pages = {name[:-3] for name in os.listdir(os.path.join(ROOT, "docs", "errors")) if name.endswith(".md")}
    assert set(where) == pages - {INTERNAL}, "a code made another way, or a page without a code"
    # ...the module named by the code (tests/test_codes.py holds every code to that)
    for code in ("E0201", "E0206", "E0212", "E0301", "E0304", "E0401", "E0402", "E0404", "E0405"):
        assert where[code] == {os.path.join("check", "codes", code.lower() + ".py")}, code
    for code in ("E0101", "E0102", "E0103", "E0104"):
        assert where[code] == {os.path.join("syntax", "codes", code.lower() + ".py")}, code


def _messages(src):
    return [(d.code, d.message) for d in check(src)[1] if d.severity == 1]


def test_an_unknown_keyword_is_a_parameter_for_builtins_and_functions():
    src = ("dim D = 4\nfn g(x: [n D]) -> [n D]:\n    return x\n"
           "fn f(x: [n D]) -> [n D]:\n    y = softmax(x, ovr=D)\n    return g(x, xx=x)\n")
    ws, diags = check(src)
    got = [(d.code, d.message, d.helps) for d in diags if d.severity == 1]
    assert got == [
        ("E0206", "`softmax` has no parameter `ovr`", ["there is a parameter with a similar name: `over`"]),
        ("E0206", "`g` has no parameter `xx`", ["there is a parameter with a similar name: `x`"])]


def test_arity_reads_the_same_for_builtins_and_functions():
    src = ("dim D = 4\nfn g(x: [n D], y: [n D]) -> [n D]:\n    return x\n"
           "fn f(x: [n D]) -> [n D]:\n    y = relu(x, x)\n    return g(x)\n")
    assert _messages(src) == [("E0206", "`relu` takes 1 argument, got 2"), ("E0206", "`g` takes 2 arguments, got 1")]
