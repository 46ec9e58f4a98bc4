"""The parser and checker never raise: random text and random edits of the examples."""
import glob
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapescript_core.workspace import Workspace

from checkout import PROGRAMS, ROOT

# the programs of this repository: the examples and the tests' programs (conformance copies too)
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.ss")) +
                  glob.glob(os.path.join(PROGRAMS, "**", "*.ss"), recursive=True))
TEXTS = [open(p, encoding="utf-8").read() for p in EXAMPLES]
ALPHABET = st.sampled_from(list("abnDHV()[]:,.=@+-*/|>!#\"\n\t 0123456789_") +
                           ["dim ", "fn ", "model ", "return ", "->", "|>", "    ", "for ", " in ",
                            "import ", "causal[", "einsum(", "split(", "Index[V]", "é", "𝒳"])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(text: str):
    ws = Workspace()
    ws.set_text("/tmp/shapescript-fuzz/f.ss", text)
    diags = ws.diagnostics("/tmp/shapescript-fuzz/f.ss")
    for d in diags:
        assert d.code and d.message
        assert 0 <= d.span.abs_start <= d.span.abs_end <= len(text) + 1
    return diags


def test_the_edits_start_from_the_repository_s_programs():
    names = {os.path.relpath(p, ROOT) for p in EXAMPLES}
    assert {"examples/llama.ss", "examples/broken_attention.ss", "tests/programs/ok/gpt2.ss",
            "tests/programs/export/seed_e3304.ss"} <= names
    assert len(TEXTS) >= 20 and all(t.strip() for t in TEXTS)


@SETTINGS
@given(st.lists(ALPHABET, max_size=80).map("".join))
def test_random_text_never_raises(text):
    _check(text)


@SETTINGS
@given(st.integers(0, len(TEXTS) - 1), st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 12), st.lists(ALPHABET, max_size=4).map("".join)),
    min_size=1, max_size=6))
def test_random_edits_of_examples_never_raise(which, edits):
    text = TEXTS[which]
    ws = Workspace()
    path = "/tmp/shapescript-fuzz/e.ss"
    ws.set_text(path, text)
    ws.diagnostics(path)
    for where, cut, insert in edits:
        i = int(where * len(text))
        text = text[:i] + insert + text[i + cut:]
        ws.set_text(path, text)
        inc = sorted((d.code, d.span.abs_start, d.message) for d in ws.diagnostics(path))
        fresh = sorted((d.code, d.span.abs_start, d.message) for d in _check(text))
        assert inc == fresh  # the incremental cache agrees with a fresh check


@SETTINGS
@given(st.integers(0, len(TEXTS) - 1), st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 30), st.lists(ALPHABET, max_size=5).map("".join)),
    min_size=1, max_size=8))
def test_reparsing_around_an_edit_equals_parsing_anew(which, edits):
    from shapescript_core.syntax.parser import changed_range, parse_file, reparse_file
    text = TEXTS[which]
    items = parse_file(text, "r.ss")
    for where, cut, insert in edits:
        i = int(where * len(text))
        new = text[:i] + insert + text[i + cut:]
        p, old_end, new_end = changed_range(text, new)
        assert text[:p] == new[:p] and text[old_end:] == new[new_end:]
        items = reparse_file(items, text, new, "r.ss")
        text = new
        fresh = parse_file(text, "r.ss")
        assert [(it.offset, it.text, it.doc) for it in items] == \
               [(it.offset, it.text, it.doc) for it in fresh]
