"""Ways to parse faster, measured on the function bodies of a generated 10,000-line file
(`gen.py`): what docs/language-server.md ("Parsing: the candidates") chose from.

- our lexer (`syntax/lexer.py`: layout, continuation lines, axis-pattern starts);
- parsing its tokens with our LALR loop over lark's table (`parser._Driver`, the AST
  built as it reduces), with lark's own LALR parser (pure Python), and with
  lark-cython's LALR fed the same tokens (its ParserState: its parser takes no other
  lexer's state, and the grammar needs ours);
- parsing in other processes: the cost of sending the parsed items back (pickle, both
  ways) against parsing them in place.

lark-cython is not a dependency: install it beside, for this benchmark only,
`pip install --target DIR lark-cython`, and pass `--lark-cython DIR`.

    .venv/bin/python bench/parse_candidates.py [--lark-cython DIR] [--lines 10000]
"""
from __future__ import annotations

import argparse
import gc
import os
import pickle
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from gen import generate  # noqa: E402
from lark import Lark  # noqa: E402
from lark.lexer import Lexer, Token as LarkToken  # noqa: E402

from shapescript_core.syntax import parser as P  # noqa: E402
from shapescript_core.syntax.lexer import tokenize  # noqa: E402


def best_of(n: int, fn) -> float:
    """The fastest of n runs, in ms, the cycle collector paused (as the server parses)."""
    times = []
    gc.disable()
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return min(times) * 1000


_FEED: list = []


class _Feed(Lexer):
    """Hands lark the tokens our lexer made."""

    def __init__(self, conf):
        pass

    def lex(self, *args):
        return iter(_FEED)


def _as(cls, tokens: list) -> list:
    return [cls(t.type, t.value, t.start_pos, 0, 0, 0, 0, t.end_pos) for t in tokens]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--lark-cython", metavar="DIR", help="where lark-cython was installed (pip install --target)")
    args = ap.parse_args(argv)
    text = generate(args.lines)
    bodies = [text[s:e] for s, e, _ in P.iter_items(text) if text.startswith("fn", s)]
    print(f"{len(bodies)} functions of a {text.count(chr(10))}-line file, best of 3:")
    lexed: list = []
    print(f"  our lexer:                                     {best_of(3, lambda: lexed.__setitem__(slice(None), [tokenize(b)[0] for b in bodies])):6.0f} ms")
    driver = P._driver()
    print(f"  our LALR loop over lark's table, AST built:    {best_of(3, lambda: [driver.parse(t) for t in lexed]):6.0f} ms")
    # the AST builder tells a token from a node by its class: lark's tokens count as ours here
    P.Token = (P.Token, LarkToken)
    plain = Lark(P._GRAMMAR, parser="lalr", lexer=_Feed, transformer=P._Build(), maybe_placeholders=False)
    as_lark = [_as(LarkToken, t) for t in lexed]

    def lark_plain():
        for t in as_lark:
            _FEED[:] = t
            plain.parse("")
    print(f"  lark's own LALR (pure Python), AST built:      {best_of(3, lark_plain):6.0f} ms")
    if args.lark_cython:
        sys.path.insert(0, args.lark_cython)
        import lark_cython.lark_cython as LC
        P.Token = (P.Token[0], LarkToken, LC.Token)
        inner = plain.parser.parser.parser
        as_cython = [_as(LC.Token, t) for t in lexed]
        end = LC.Token("$END", "", 0, 0, 0, 0, 0, 0)

        def cython():
            for t in as_cython:
                state = LC.ParserState(LC.ParseConf(inner.parse_table, inner.callbacks, "start"), None)
                for tok in t:
                    state.feed_token(tok)
                state.feed_token(end, True)
        print(f"  lark-cython's LALR fed our tokens, AST built:  {best_of(3, cython):6.0f} ms")
    else:
        print("  lark-cython: not measured (--lark-cython DIR)")
    P.Token = P.Token[0]
    items: list = []
    whole = best_of(3, lambda: items.__setitem__(slice(None), P.parse_file(text, "/bench.ss")))
    blob = pickle.dumps(items, protocol=5)
    print(f"  the whole file parsed in place (bodies too):   {whole:6.0f} ms")
    print(f"  its items sent from another process (pickle):  {best_of(3, lambda: pickle.dumps(items, protocol=5)):6.0f} ms "
          f"to write + {best_of(3, lambda: pickle.loads(blob)):.0f} ms to read, {len(blob) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
