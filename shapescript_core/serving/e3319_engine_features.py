"""E3319: an engine can't run an operation the exported function computes. Its rule (which
operation each engine lacks), its check, its message and help; the writers refuse in the
same words (`export_error_text`) if an export gets that far.

- vLLM: attention sinks (`sinks=`, gpt-oss). Its Transformers backend drops them (its
  attention functions take no `s_aux`) and the native model doesn't pass them to vLLM's
  attention yet.
- LiteRT: rope scaling, a partial rotary (`rotary_dims`), softcaps, attention sinks and
  `topk`/`take` (a mixture of experts): LiteRT-Torch's `export_hf` replaces the attention
  and the rotary table with its own and has not been shown to keep them, so the export
  refuses them rather than convert a model that might compute another function.

Checked where the engine was asked for (`@export(vllm)`, `check --target litert`, `export
--vllm`, the editor's Export, the settings' default targets), as E3313 is: a plain
`forward` implies every target, and an error on every model with sinks would be noise to
a user of --hf. Once E3301 to E3306 pass; one diagnostic per engine and function, at the
first operation (in the order the model runs) that the engine lacks, a label at the first
use of each other feature it lacks. No numpy, no torch.
"""
from __future__ import annotations

import logging
import os

from ..compile.graph import CompileError, trace
from ..diagnostics import error
from ..targets import asked_for
from .places import item_of_node

log = logging.getLogger("shapescript.export")

ENGINES = {"vllm": "vLLM", "litert": "LiteRT"}
WHY = {
    "vllm": ("The vLLM export doesn't pass attention sinks to vLLM's attention yet, and vLLM's "
             "Transformers backend drops them."),
    "litert": ("The LiteRT export (LiteRT-Torch's export_hf, which replaces the attention and the rotary "
               "table with its own) doesn't keep these yet."),
}
HELP = "Export it with --hf, which runs it as written."


def _sinks(n):
    if n.op == "scaled_dot_product_attention" and n.attrs.get("args", {}).get("sinks") is not None:
        return "attention sinks"
    return None


def _scaling(n):
    if n.op == "rope" and n.attrs.get("scaling", "none") != "none":
        return f"rope scaling ({n.attrs['scaling']})"
    return None


def _partial(n):
    if n.op == "rope" and n.attrs.get("args", {}).get("rotary_dims") is not None:
        return "a partial rotary (rotary_dims)"
    return None


def _softcap(n):
    if n.op == "softcap" or (n.op == "scaled_dot_product_attention"
                             and n.attrs.get("args", {}).get("softcap") is not None):
        return "a softcap"
    return None


def _experts(n):
    if n.op in ("topk", "take"):  # §6.2: a mixture of experts, or a gather of its own
        return f"`{n.op}`"
    return None


# engine -> the features it lacks, each a test of one traced node (its words, or None)
LACKS = {
    "vllm": (_sinks,),
    "litert": (_scaling, _partial, _softcap, _sinks, _experts),
}


def lacking(nodes, engine: str) -> list:
    """[(words, node)]: the first node of each feature the engine lacks, in the nodes' order
    (a trace's: the order the model runs)."""
    seen: dict = {}
    for n in nodes:
        for test in LACKS.get(engine, ()):
            if test in seen:
                continue
            words = test(n)
            if words is not None:
                seen[test] = (words, n)
    return sorted(seen.values(), key=lambda wn: nodes.index(wn[1]))


def _and(words: list) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def message(engines: list, fn: str, words: list) -> str:
    return f"{_and([ENGINES[e] for e in engines])} can't run `{fn}`: it uses {_and(words)}"


def export_error_text(engine: str, fn: str, found: list) -> str:
    """A writer's refusal, when an export gets that far: the message, naming the lines."""
    words = [f"{w} (line {n.where[1]})" for w, n in found]
    return f"error[E3319]: {message([engine], fn, words)}. {WHY[engine]} Export it with --hf."


def check_engine_features(prog, item, targets: set) -> list:
    """One diagnostic for the function, whichever of the engines asked for lack what."""
    db = prog.db
    engines = [e for e in LACKS if e in targets
               and asked_for(item, e, db.inputs.requests_of(prog.path), db.inputs.default_targets)]
    if not engines:
        return []
    try:
        tr = trace(prog.db, prog.path, item.name, unroll=2)
    except CompileError as e:  # the export reports what it can't compile itself
        log.debug("no E3319 check for `%s`: %s", item.name, e)
        return []
    features: dict = {}  # words -> [node, engines lacking it], in the order the model runs
    for engine in engines:
        for words, n in lacking(tr.nodes, engine):
            features.setdefault(words, [n, []])[1].append(engine)
    if not features:
        return []
    order = sorted(features.items(), key=lambda kv: tr.nodes.index(kv[1][0]))
    lack = [e for e in engines if any(e in es for _, (_, es) in order)]
    d = None
    for words, (n, es) in order:
        span, label = _place(prog, tr, item, n, f"{words}: {_and([ENGINES[e] for e in es])} can't run it")
        if d is None:
            d = error("E3319", message(lack, item.name, [w for w, _ in order]), span, label)
        else:
            d.label(span, label)
    for e in lack:
        d.note(WHY[e])
    return [d.help(HELP)]


def _place(prog, tr, item, n, label: str) -> tuple:
    """(span, label) of a node: at it in this file, else at the function's name."""
    at = item_of_node(prog, tr, n)
    if at is not None and prog.local(at) and n.ast is not None:
        return at.span(n.ast.pos), label
    path, line = n.where
    return item.span(item.name_pos), f"{label} (at {os.path.basename(path)}:{line})"
