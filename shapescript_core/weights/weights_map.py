"""`--weights-map FILE`: a TOML file mapping param paths to checkpoint keys, for a
checkpoint no architecture table knows (see docs/importing-weights.md).

Each entry maps a param path pattern (`{i}`, `{j}`... stand for numbers: stack indices)
to a checkpoint key with the same placeholders, or to a table:

    "embed" = "wte.weight"
    "layers.{i}.attn.wq" = "h.{i}.attn.q.weight"
    "layers.{i}.attn.wkv" = { concat = ["h.{i}.attn.k.weight", "h.{i}.attn.v.weight"] }
    "layers.{i}.attn.wkv" = { concat = [{ key = "h.{i}.k.weight", permute_rotary = { heads = 8 } },
                                        "h.{i}.v.weight"], transpose = true }
    "layers.{i}.attn.wk" = { key = "h.{i}.attn.qkv.weight", split = [1, 3] }   # part 1 of 3
    "layers.{i}.mlp.w_in" = { key = "h.{i}.mlp.fc.weight", transpose = true }
    "layers.{i}.attn.wq" = { key = "h.{i}.q.weight", permute_rotary = { heads = 32, to = "half" } }

`concat` stacks tensors along their first axis (each one a key, or a table with its own
`key`, `split` and `permute_rotary`), `split = [INDEX, PARTS]` takes one of PARTS equal
slices of the first axis; then `permute_rotary` permutes rows between the interleaved
and the rotate-half rotary layouts (`to`: the source's, "half" unless said), then
`transpose`. The first entry whose pattern matches a param is its.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

from ..files import ReadRefused, read_bytes
from ..arch.plan import RopePermute, Transpose
from ..export_errors import ExportError
from .recipe import Part, Recipe, Rows, step_shape

_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
OPTIONS = {"key", "concat", "split", "transpose", "permute_rotary"}


@dataclass
class PartRule:
    key: str                 # a key template
    split: tuple | None      # (index, parts)
    permute: RopePermute | None


@dataclass
class Rule:
    pattern: str
    regex: re.Pattern
    parts: list               # [PartRule]: one, or several stacked (concat)
    concat: bool
    transpose: bool
    permute: RopePermute | None   # on the stacked rows (concat), before transpose


def _bad(file: str, entry: str, why: str) -> ExportError:
    return ExportError(f"the weights map {file}: `{entry}` {why}")


def read_map(file: str) -> list:
    name = file
    try:
        doc = tomllib.loads(read_bytes(file).decode("utf-8"))  # regular and bounded (files.py)
    except ReadRefused as e:
        raise ExportError(f"can't read the weights map {name}: {e.refusal.reason}") from None
    except OSError as e:
        raise ExportError(f"can't read the weights map {name}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ExportError(f"the weights map {name} is not TOML: {e}") from None
    rules = []
    for pattern, value in doc.items():
        if not isinstance(pattern, str) or not pattern:
            raise _bad(name, str(pattern), "is no param path pattern")
        if isinstance(value, str):
            value = {"key": value}
        if not isinstance(value, dict):
            raise _bad(name, pattern, "takes a checkpoint key or a table (key, concat, split, transpose, "
                                      "permute_rotary)")
        unknown = set(value) - OPTIONS
        if unknown:
            raise _bad(name, pattern, f"has no option `{sorted(unknown)[0]}`: use {', '.join(sorted(OPTIONS))}")
        if ("key" in value) == ("concat" in value):
            raise _bad(name, pattern, "takes either `key` or `concat`")
        if "concat" in value:
            items = value["concat"]
            if not isinstance(items, list) or not items:
                raise _bad(name, pattern, "takes `concat` as a list of keys (or tables with a `key`)")
            if "split" in value:
                raise _bad(name, pattern, "can't both split and concat: split each part of the concat")
            parts = [_part(name, pattern, it if isinstance(it, dict) else {"key": it}, nested=True)
                     for it in items]
            permute = _permute(name, pattern, value.get("permute_rotary"))
        else:
            parts = [_part(name, pattern, value, nested=False)]
            permute = None
        transpose = value.get("transpose", False)
        if not isinstance(transpose, bool):
            raise _bad(name, pattern, "takes `transpose = true` or `false`")
        names = _PLACEHOLDER.findall(pattern)
        for k in (p.key for p in parts):
            extra = set(_PLACEHOLDER.findall(k)) - set(names)
            if extra:
                raise _bad(name, pattern, f"maps to `{k}`, whose `{{{sorted(extra)[0]}}}` the pattern lacks")
        try:
            regex = re.compile("".join(f"(?P<{m.group(1)}>\\d+)" if m else re.escape(t) for t, m in _tokens(pattern)))
        except re.error:
            raise _bad(name, pattern, "names a placeholder twice") from None
        rules.append(Rule(pattern, regex, parts, "concat" in value, transpose, permute))
    return rules


def _part(name: str, pattern: str, value: dict, nested: bool) -> PartRule:
    allowed = {"key", "split", "permute_rotary"} | (set() if nested else OPTIONS)
    unknown = set(value) - allowed
    if unknown:
        raise _bad(name, pattern, f"has no option `{sorted(unknown)[0]}` there: use {', '.join(sorted(allowed))}")
    key = value.get("key")
    if not isinstance(key, str) or not key:
        raise _bad(name, pattern, "takes checkpoint keys as strings")
    split = value.get("split")
    if split is not None and (not isinstance(split, list) or len(split) != 2
                              or not all(isinstance(x, int) and not isinstance(x, bool) for x in split)
                              or not 0 <= split[0] < split[1]):
        raise _bad(name, pattern, "takes `split = [INDEX, PARTS]`, with 0 <= INDEX < PARTS")
    return PartRule(key, tuple(split) if split else None, _permute(name, pattern, value.get("permute_rotary")))


def _permute(name: str, pattern: str, permute):
    if permute is None:
        return None
    if (not isinstance(permute, dict) or set(permute) - {"heads", "to"} or not isinstance(permute.get("heads"), int)
            or isinstance(permute.get("heads"), bool) or permute["heads"] <= 0
            or permute.get("to", "half") not in ("half", "interleaved")):
        raise _bad(name, pattern, "takes `permute_rotary = { heads = N, to = \"half\" }` (or to = \"interleaved\")")
    return RopePermute(permute["heads"], permute.get("to", "half"))


def _tokens(pattern: str):
    pos = 0
    for m in _PLACEHOLDER.finditer(pattern):
        if m.start() > pos:
            yield pattern[pos:m.start()], None
        yield "", m
        pos = m.end()
    if pos < len(pattern):
        yield pattern[pos:], None


def rule_for(rules, path: str):
    for r in rules:
        m = r.regex.fullmatch(path)
        if m:
            return r, {k: v for k, v in m.groupdict().items()}
    return None, None


def keys_for(rule: Rule, groups: dict) -> list:
    """The checkpoint keys a rule names for one param's placeholder values."""
    return [_PLACEHOLDER.sub(lambda m: groups[m.group(1)], p.key) for p in rule.parts]


def _part_steps(part: PartRule, shape: tuple):
    """(steps, shape after them) of one part: its split, then its rotary permutation."""
    steps: tuple = ()
    if part.split is not None:
        index, n_parts = part.split
        if not shape or shape[0] % n_parts:
            return None, None
        n = shape[0] // n_parts
        steps = (Rows(index * n, (index + 1) * n),)
        shape = step_shape(shape, steps)
    if part.permute is not None:
        if not shape or shape[0] % (2 * part.permute.heads):
            return None, None
        steps += (part.permute,)
    return steps, shape


def recipe_for(rule: Rule, groups: dict, spec, shape_of) -> tuple:
    """(Recipe, its result's shape or None when the tensors can't make one, the keys it
    reads) for one param; `shape_of(key)` gives a checkpoint tensor's shape."""
    keys = keys_for(rule, groups)
    post = ((rule.permute,) if rule.permute else ()) + ((Transpose(),) if rule.transpose else ())
    r = Recipe(spec.path, tuple(spec.shape))
    shapes = []
    for part, k in zip(rule.parts, keys):
        steps, shape = _part_steps(part, tuple(shape_of(k)))
        if steps is None:
            return r, None, keys
        shapes.append(shape)
        r.parts.append(Part(k, steps))
    if not rule.concat:
        r.parts[0].steps += post
        return r, step_shape(shapes[0], post), keys
    if len({s[1:] for s in shapes}) > 1 or any(not s for s in shapes):
        return r, None, keys
    rows = 0
    for part, s in zip(r.parts, shapes):
        part.scatter = (0, tuple(range(rows, rows + s[0])))
        rows += s[0]
    r.buffer = (rows,) + shapes[0][1:]
    r.post = post
    if rule.permute is not None and rows % (2 * rule.permute.heads):
        return r, None, keys
    return r, step_shape(r.buffer, post), keys
