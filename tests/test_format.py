"""The formatter: the layout rules on fixtures (input → expected), and on every program of
the project (examples/, tests/programs/, the conformance cases): every token and comment
kept, idempotent, the diagnostics unchanged. Then `shapescript fmt`."""
from __future__ import annotations

import glob
import os
import re
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkout import SHARED, shapescript
from shapescript_core.ide.format import format_markdown, format_range, format_text
from shapescript_core.syntax.lexer import tokenize
from shapescript_core.syntax.parser import parse_file
from shapescript_core.workspace import Workspace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFORMANCE = os.path.join(SHARED, "conformance") if SHARED else None  # when beside the checkout

RULES = [
    ("spaces around operators, after commas and colons", """\
        fn f(x:[b n D],w:[D D])->[b n D]:
            y=x+linear(x,w)*2.0
            return -y|>softmax(over=D)
        """, """\
        fn f(x: [b n D], w: [D D]) -> [b n D]:
            y = x + linear(x, w) * 2.0
            return -y |> softmax(over=D)
        """),
    ("sizes tight, axes and patterns one space apart", """\
        model M:
            wq: [ H * Dh   D ]
            layers:[L]M2
        fn f(x: [b n (H*Dh)]) -> [b H n Dh]:
            return x |> rearrange( b  n (H  Dh)->b H n Dh )
        """, """\
        model M:
            wq: [H*Dh D]
            layers: [L] M2

        fn f(x: [b n (H*Dh)]) -> [b H n Dh]:
            return x |> rearrange(b n (H Dh) -> b H n Dh)
        """),
    ("einsum patterns, masks, dtypes, decorators", """\
        @export( hf,vllm )
        fn f(q: [b n D], ids: [b n]Index[ V ]) -> [b n n]:
            a = einsum(q,q:b n D,b m D->b n m)
            return softmax(a,over=m,mask=causal [n n])
        """, """\
        @export(hf, vllm)
        fn f(q: [b n D], ids: [b n] Index[V]) -> [b n n]:
            a = einsum(q, q: b n D, b m D -> b n m)
            return softmax(a, over=m, mask=causal[n n])
        """),
    ("a broken pipeline: one step a line", """\
        fn f(x: [b n D]) -> [b n D]:
            y = x |> linear(w) |> gelu
              |> linear(w2)
            return y
        """, """\
        fn f(x: [b n D]) -> [b n D]:
            y = x
                |> linear(w)
                |> gelu
                |> linear(w2)
            return y
        """),
    ("a pipeline too long for one line breaks", """\
        fn f(x: [b n D]) -> [b n D]:
            return x |> linear(a_rather_long_weight_name) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(positions)
        """, """\
        fn f(x: [b n D]) -> [b n D]:
            return x
                |> linear(a_rather_long_weight_name)
                |> rearrange(b n (H Dh) -> b H n Dh)
                |> rope(positions)
        """),
    ("indentation, blank lines between items, comments kept", """\
        # the sizes
        dim D = 4


        # a doc comment
        model M:
          w: [D D]   # the weight
          # a lone comment

          b: [D]
        fn f(x: [D]) -> [D]:
          for l in m.layers:
                x = x   # same
          return x
        # the end


        """, """\
        # the sizes
        dim D = 4

        # a doc comment
        model M:
            w: [D D]  # the weight
            # a lone comment

            b: [D]

        fn f(x: [D]) -> [D]:
            for l in m.layers:
                x = x  # same
            return x
        # the end
        """),
    ("dim blocks aligned; a blank line starts a new block", """\
        dim V = 32000
        dim Hkv = 8
        dim Dh = D / H  # derived
        dim B

        dim L=2
        dim Width = 3
        """, """\
        dim V   = 32000
        dim Hkv = 8
        dim Dh  = D / H  # derived
        dim B

        dim L     = 2
        dim Width = 3
        """),
    ("brackets across lines: one level in, each line's break kept", """\
        fn f(x: [b n D],
                     w: [D D]) -> [b n D]:
            return scaled_dot_product_attention(x, x,
                                                x, attn_mask=causal[n n])
        """, """\
        fn f(x: [b n D],
            w: [D D]) -> [b n D]:
            return scaled_dot_product_attention(x, x,
                x, attn_mask=causal[n n])
        """),
    ("an item with a syntax error is left as it is", """\
        fn f(x: [D]) -> [D]:
            y =   x +
            return   x
        fn g(x:[D])->[D]:
            return x
        """, """\
        fn f(x: [D]) -> [D]:
            y =   x +
            return   x

        fn g(x: [D]) -> [D]:
            return x
        """),
]


@pytest.mark.parametrize("name,src,expected", RULES, ids=[r[0] for r in RULES])
def test_layout_rules(name, src, expected):
    src, expected = textwrap.dedent(src), textwrap.dedent(expected)
    assert format_text(src) == expected
    assert format_text(expected) == expected


def _corpus() -> list:
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "*.ss")))
    files += sorted(glob.glob(os.path.join(ROOT, "tests", "programs", "**", "*.ss"), recursive=True))
    if CONFORMANCE:
        files += sorted(glob.glob(os.path.join(CONFORMANCE, "**", "*.ss"), recursive=True))
    return files


def _tokens_and_comments(text: str) -> tuple:
    toks = []
    for it in parse_file(text, "<t>"):
        got, _ = tokenize(it.text)
        toks += [(t.type, t.value) for t in got if t.type not in ("_NL", "_INDENT", "_DEDENT", "PSTART")]
    comments = re.findall(r"#[^\n]*", re.sub(r'"[^"\n]*"', '""', text))
    return toks, [c.rstrip() for c in comments]


def _diagnostics(path: str, text: str) -> list:
    """(code, severity, message, the text under the span without its spaces) of every diagnostic; the
    files it imports are read from disk. A message naming a line (`(line 44)`) may name
    another after blank lines are collapsed: the number is left out; source text it quotes
    (`V = 10*00`) is compared without its spaces, which formatting changes."""
    ws = Workspace()
    ws.set_text(path, text)
    f = ws.file(path)
    out = []
    for d in ws.diagnostics(path):
        under = f.text[d.span.abs_start:d.span.abs_end] if d.path == ws.norm(path) else ""
        message = re.sub(r"\bline \d+", "line N", d.message)
        message = re.sub(r"`[^`]*`", lambda m: "".join(m.group(0).split()), message)  # quoted source, spaced anew
        out.append((d.code, str(d.severity), message, "".join(under.split())))
    return sorted(out)


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: os.path.relpath(p, os.path.dirname(ROOT)))
def test_every_program_keeps_its_tokens_comments_and_diagnostics(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    out = format_text(text)
    assert format_text(out) == out, "formatting is not idempotent"
    assert _tokens_and_comments(out) == _tokens_and_comments(text)
    assert _diagnostics(path, out) == _diagnostics(path, text)


def test_the_corpus_is_not_empty():
    assert len(_corpus()) >= 20


def test_the_examples_are_formatted():
    for path in glob.glob(os.path.join(ROOT, "examples", "*.ss")):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        assert format_text(text) == text, f"{path}: run `shapescript fmt examples`"


def test_the_docs_code_blocks_are_formatted():
    pages = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True) + [os.path.join(ROOT, "README.md")]
    blocks = 0
    for path in pages:
        with open(path, encoding="utf-8") as fh:
            doc = fh.read()
        blocks += doc.count("```shapescript")
        assert format_markdown(doc) == doc, f"{path}: run `shapescript fmt {os.path.relpath(path, ROOT)}`"
    assert blocks > 10


def test_markdown_blocks_are_formatted_at_their_indentation():
    doc = "text\n\n- item:\n  ```shapescript\n  dim D=4\n  fn f(x:[D])->[D]:\n      return x\n  ```\n"
    assert format_markdown(doc) == ("text\n\n- item:\n  ```shapescript\n  dim D = 4\n\n"
                                    "  fn f(x: [D]) -> [D]:\n      return x\n  ```\n")


def test_format_range_changes_only_the_items_it_touches():
    src = "fn f(x:[D])->[D]:\n    return x\n\nfn g(x:[D])->[D]:\n    return x\n"
    start = src.index("fn g")
    (piece,) = format_range(src, start, start + 3)
    assert src[piece.start:piece.end] == "fn g(x:[D])->[D]:\n    return x\n"
    assert piece.text == "fn g(x: [D]) -> [D]:\n    return x\n"


def _cli(*args, cwd):
    return shapescript("fmt", *args, cwd=cwd, timeout=60)


def test_fmt_check_then_fmt(tmp_path):
    (tmp_path / "sub").mkdir()
    ugly = "dim D=4\nfn f(x:[D])->[D]:\n  return x\n"
    (tmp_path / "a.ss").write_text(ugly)
    (tmp_path / "sub" / "b.ss").write_text("dim D = 4\n")
    (tmp_path / "crlf.ss").write_bytes(b"dim D=4\r\n")
    r = _cli("--check", cwd=tmp_path)
    assert r.returncode == 1
    assert sorted(r.stdout.split("\n")) == ["", "would reformat a.ss", "would reformat crlf.ss"]
    assert "2 files would be reformatted, 1 left unchanged" in r.stderr
    assert (tmp_path / "a.ss").read_text() == ugly  # --check changes nothing
    r = _cli("a.ss", "sub", "crlf.ss", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.ss").read_text() == "dim D = 4\n\nfn f(x: [D]) -> [D]:\n    return x\n"
    assert (tmp_path / "crlf.ss").read_bytes() == b"dim D = 4\r\n"
    assert _cli("--check", ".", cwd=tmp_path).returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["a.ss", "crlf.ss", "sub"]  # no temporary left


def test_fmt_bad_paths_are_said_plainly(tmp_path):
    (tmp_path / "bad.ss").write_bytes(b"dim D = 4 # \xff\n")
    r = _cli("bad.ss", "missing.ss", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "shapescript: can't read `missing.ss`: no such file or folder"
    r = _cli("bad.ss", cwd=tmp_path)
    assert r.returncode == 2
    assert "shapescript: can't read `bad.ss`: 'utf-8' codec can't decode byte 0xff" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("check", [False, True], ids=["fmt", "fmt --check"])
def test_fmt_refuses_a_fifo_at_once_as_check_does(tmp_path, check):
    """`fmt` reads as `check` does (shapescript_core/files.py): a FIFO is refused without
    waiting for a writer, in check's one line, and nothing is written."""
    os.mkfifo(tmp_path / "fifo.ss")
    (tmp_path / "a.ss").write_text("dim D=4\n")
    r = shapescript("fmt", *(["--check"] if check else []), "fifo.ss", "a.ss", cwd=tmp_path, timeout=30)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0] == "shapescript: can't read `fifo.ss`: it is a FIFO (named pipe), not a regular file"
    assert lines[0] == shapescript("check", "fifo.ss", cwd=tmp_path, timeout=30).stderr.strip()
    assert "Traceback" not in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["a.ss", "fifo.ss"]
    assert (tmp_path / "a.ss").read_text() == ("dim D=4\n" if check else "dim D = 4\n")  # the others go on


def test_fmt_keeps_the_settings_size_limit(tmp_path):
    (tmp_path / "shapescript.toml").write_text('[limits]\nmax_file_size = "1 KiB"\n')
    big = "dim D=4\n" * 200
    (tmp_path / "m.ss").write_text(big)
    for args in (["m.ss"], ["--check", "m.ss"]):
        r = _cli(*args, cwd=tmp_path)
        assert r.returncode == 2
        assert r.stderr.splitlines()[0] == ("shapescript: can't read `m.ss`: it is 1.6 KiB, over the limit of "
                                            "1 KiB (`max_file_size` in shapescript.toml's [limits])")
    assert (tmp_path / "m.ss").read_text() == big


FUZZ_TEXTS = [open(p, encoding="utf-8").read() for p in _corpus()[:40]]
FUZZ_ALPHABET = st.sampled_from(list("abnD()[]:,.=@+-*/|>!#\"\n 0123456789_") +
                                ["dim ", "fn ", "model ", "return ", "->", " |> ", "    ", "  ", "for ", " in ",
                                 "\n\n", "# c\n", "causal[", "einsum(", "Index[V]", "é"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(FUZZ_TEXTS) - 1), st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 8), st.lists(FUZZ_ALPHABET, max_size=4).map("".join)),
    min_size=1, max_size=5))
def test_random_edits_of_the_programs_format_safely(which, edits):
    """Whatever the text (broken or not): the tokens and comments kept, idempotent, the
    same diagnostics."""
    text = FUZZ_TEXTS[which]
    for where, cut, insert in edits:
        i = int(where * len(text))
        text = text[:i] + insert + text[i + cut:]
    out = format_text(text)
    assert format_text(out) == out
    assert _tokens_and_comments(out) == _tokens_and_comments(text)
    assert _diagnostics("/tmp/shapescript-fmt-fuzz/f.ss", out) == _diagnostics("/tmp/shapescript-fmt-fuzz/f.ss", text)
