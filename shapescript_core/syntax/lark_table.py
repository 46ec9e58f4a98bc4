"""lark's LALR parser for the grammar, built once and kept.

Building it (compiling the grammar, then the LALR analysis) took 0.05-0.1 s of every
start of the command line and of the server (docs/importing-weights.md, Speed); reading
it back takes about 3 ms. It is kept as lark serializes it (`memo_serialize`: dicts,
lists, tuples, strings and numbers) in the parse cache's private folder
(`parse_cache.cache_dir()`), in a file `lalr-HASH.lalr` named by a hash of the grammar, lark's version,
Python's and FORMAT, written by `parse_cache.write_private`.

It is read only when the file and its folder are private to this user (as the parse
cache), through an unpickler that builds no class at all: a planted file can't run
code. The two values that are classes (our lexer stand-in, saved as a name) are put
back after reading; the transformer is given again. A missing, unreadable, foreign or
not private file is no cache, and a folder that can't be written keeps none: logged at
debug level only (every command of the command line would otherwise print it), the
parser is built as before.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from . import parse_cache

log = logging.getLogger("shapescript.cache")
FORMAT = 1
_LEXER = "shapescript-no-lexer"  # stands for the lexer class in the saved data


def _file(grammar: str) -> str:
    key = f"{FORMAT}\0{lark.__version__}\0{sys.version_info[:2]}\0{grammar}"
    return os.path.join(parse_cache.cache_dir(), "lalr-" + hashlib.sha256(key.encode()).hexdigest()[:32] + ".lalr")


class _PlainUnpickler(pickle.Unpickler):
    """Builds containers, strings and numbers only: no class, no function."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"{module}.{name}: the parser's table holds no classes")


def parser(grammar: str, lexer: type, transformer) -> Lark:
    """`Lark(grammar, parser="lalr", lexer=lexer, transformer=transformer,
    maybe_placeholders=False)`, read back from the cache when it was built before."""
    path = _file(grammar)
    loaded = _load(path, lexer, transformer)
    if loaded is not None:
        return loaded
    built = Lark(grammar, parser="lalr", lexer=lexer, transformer=transformer, maybe_placeholders=False)
    _save(path, built, lexer)
    return built


def _load(path: str, lexer: type, transformer):
    saved = parse_cache.read_private(path, lambda fh: _PlainUnpickler(fh).load(), "parser table",
                                     level=logging.DEBUG)
    if saved is None:
        return None
    try:
        fmt, data, memo = saved
        if fmt != FORMAT or data["options"]["lexer"] != _LEXER or data["parser"]["lexer_conf"]["lexer_type"] != _LEXER:
            log.debug("parser table %s is not this version's", path)
            return None
        data["options"]["lexer"] = lexer
        data["parser"]["lexer_conf"]["lexer_type"] = lexer
        return Lark._load_from_dict(data, memo, transformer=transformer)
    except Exception as exc:  # a broken or foreign file is no cache: the parser is built
        log.debug("parser table %s not read: %r", path, exc)
        return None


def _save(path: str, built: Lark, lexer: type):
    data, memo = built.memo_serialize([TerminalDef, Rule])
    data = dict(data)
    data["options"] = {k: v for k, v in data["options"].items() if k != "transformer"}
    data["options"]["lexer"] = _LEXER
    data["parser"] = dict(data["parser"])
    data["parser"]["lexer_conf"] = dict(data["parser"]["lexer_conf"])
    if data["parser"]["lexer_conf"].get("lexer_type") is not lexer:
        log.debug("parser table not saved: lark serializes the lexer otherwise")
        return
    data["parser"]["lexer_conf"]["lexer_type"] = _LEXER
    if not _plain((data, memo)):  # what the unpickler would refuse: not worth writing
        log.debug("parser table not saved: lark's serialized parser holds objects")
        return
    parse_cache.write_private(path, lambda fh: pickle.dump((FORMAT, data, memo), fh, protocol=pickle.HIGHEST_PROTOCOL),
                              "parser table", prefix=".lalr-", level=logging.DEBUG)


def _plain(x) -> bool:
    """Containers, strings and numbers only (an explicit stack: no recursion limit)."""
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif not (v is None or isinstance(v, (str, int, float, bool))):
            return False
    return True
