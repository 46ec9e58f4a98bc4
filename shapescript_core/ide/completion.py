"""Completion (builtins, dims, locals, functions, models, dtypes, fields after `m.`,
keyword arguments) and signature help for calls.

Text being typed rarely parses, so completion checks a patched copy of the function
under the cursor: a placeholder name is inserted at the cursor (and, if that is not
enough, the brackets left open on the line are closed), as rust-analyzer does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..check.builtins import BUILTINS, signature_label
from ..check.env import build_signature
from ..check.function import check_function
from ..check.types import DTYPE_NAMES, ModelT
from ..diagnostics import debugging, log
from ..syntax import ast as A
from ..syntax.parser import parse_item
from .hover import fn_header, render_type
from .locate import chain, fn_result, item_at

PLACEHOLDER = "__c"
ITEM_KEYWORDS = ("dim", "model", "fn", "import")
STMT_KEYWORDS = ("return", "for", "in")
_IDENT = re.compile(r"[A-Za-z0-9_]")


@dataclass
class Completion:
    label: str
    kind: str  # local param field dim model fn builtin dtype keyword argument
    detail: str = ""
    doc: str = ""
    insert: Optional[str] = None  # text to insert when it is not the label
    sort: str = "5"  # groups: lower first


@dataclass
class SignatureHelp:
    label: str
    params: list = field(default_factory=list)  # [(start, end)] offsets into label
    active: Optional[int] = None
    doc: str = ""


# ---------------------------------------------------------------- the patched function
def _closers(text: str) -> str:
    stack = []
    for ch in _strip_comments(text):
        if ch in "([":
            stack.append(")" if ch == "(" else "]")
        elif ch in ")]" and stack:
            stack.pop()
    return "".join(reversed(stack))


def _strip_comments(text: str) -> str:
    return re.sub(r'"[^"\n]*"?|#[^\n]*', "", text)


def patched(a, item, rel: int):
    """(item, FnResult) for the function under the cursor with a placeholder name typed at
    `rel`; (None, None) when no patch parses."""

    if not isinstance(item, (A.FnItem, A.BrokenItem)):
        return None, None
    text = item.text
    line_start = text.rfind("\n", 0, rel) + 1
    line_end = text.find("\n", rel)
    line_end = len(text) if line_end < 0 else line_end
    candidates = [text[:rel] + PLACEHOLDER + text[rel:]]
    candidates.append(text[:rel] + PLACEHOLDER + _closers(text[line_start:rel]) + text[line_end:])
    for cand in candidates:
        it = parse_item(cand, item.path, item.offset)
        if isinstance(it, A.FnItem) and not it.syntax_errors:
            try:
                sig, _ = build_signature(it, a.env.dims, a.env.model_names())
                return it, check_function(it, sig, a.env)
            except Exception:  # noqa: BLE001 - a half-typed function never breaks completion
                if debugging():
                    raise
                log.exception("completion: checking %s with the placeholder failed", item.name)
                return None, None
    res = fn_result(a, item)
    return (item, res) if res is not None else (None, None)


# ---------------------------------------------------------------- completion
def completions(ws, path: str, offset: int) -> list:
    path = ws.norm(path)
    a = ws.analyze(path)
    if a is None:
        return []
    text = a.file.text
    offset = max(0, min(offset, len(text)))
    start = offset
    while start > 0 and _IDENT.match(text[start - 1]):
        start -= 1
    prefix = text[start:offset]
    line_start = text.rfind("\n", 0, start) + 1
    if "#" in _strip_strings(text[line_start:start]):
        return []
    item = item_at(a.file, offset)
    if item is None or start == line_start:
        out = [Completion(k, "keyword", sort="1") for k in ITEM_KEYWORDS]
        return _filter(out, prefix)
    rel = offset - item.offset
    env = a.env
    p_item, res = patched(a, item, rel)
    if start > 0 and text[start - 1] == ".":
        return _filter(_field_completions(a, item, p_item, res, start - item.offset), prefix)
    out: list = []
    context = _context(p_item, rel) if p_item is not None else "expr"
    if isinstance(item, A.ModelItem):
        context = "type"
    elif isinstance(item, A.DimItem):
        context = "dim"
    # keyword arguments of the call around the cursor
    call = enclosing_call(text[item.offset:offset], env)
    if call is not None and context == "expr" and not call.in_pattern:
        for name, detail in _call_params(a, call.callee):
            out.append(Completion(name, "argument", detail, insert=f"{name}=", sort="0"))
    if context in ("expr", "pattern", "type") and res is not None:
        seen = {}
        for name, pos, t in res.locals_at:
            if pos[0] < rel and not name.endswith(PLACEHOLDER):
                seen[name] = t
        if context == "expr":
            params = {p.name for p in (p_item.params if isinstance(p_item, A.FnItem) else [])}
            for name, t in seen.items():
                out.append(Completion(name, "param" if name in params else "local",
                                      render_type(env, t), sort="1"))
        for v in res.svars:
            if not env.dims.is_dim(v) and not v.endswith(PLACEHOLDER):
                out.append(Completion(v, "sizevar", "size variable", sort="2"))
    for name, it in env.dims.items.items():
        info = env.dims.info.get(name)
        detail = f"dim {name} = {info.value}" if info is not None and info.value is not None else f"dim {name}"
        out.append(Completion(name, "dim", detail, item_doc(it), sort="2"))
    if context in ("type", "expr"):
        for name in DTYPE_NAMES:
            out.append(Completion(name, "dtype", "dtype", sort="4"))
    if context == "type":
        for name, m in env.models.items():
            out.append(Completion(name, "model", f"model {name}", item_doc(m.item), sort="3"))
        out.append(Completion("Index", "dtype", "Index[V]: integer ids below V", sort="4"))
    if context == "expr":
        for name, b in BUILTINS.items():
            out.append(Completion(name, "builtin", b.signature, b.doc, sort="3"))
        for name, it in a.visible.items():
            if isinstance(it, A.FnItem) or (isinstance(it, A.BrokenItem) and it.declared_kind == "fn"):
                out.append(Completion(name, "fn", fn_header(it), item_doc(it), sort="3"))
        for k in STMT_KEYWORDS:
            out.append(Completion(k, "keyword", sort="6"))
    return _filter(out, prefix)


def item_doc(item) -> str:
    return getattr(item, "doc", "") or ""


def _strip_strings(s: str) -> str:
    return re.sub(r'"[^"\n]*"?', "", s)


def _filter(items: list, prefix: str) -> list:
    """Items whose label holds the typed prefix as a subsequence (case-insensitive)."""
    if not prefix:
        return _dedupe(items)
    p = prefix.lower()
    out = []
    for c in items:
        label = c.label.lower()
        i = 0
        for ch in label:
            if i < len(p) and ch == p[i]:
                i += 1
        if i == len(p) and label[0] == p[0]:
            out.append(c)
    return _dedupe(out)


def _dedupe(items: list) -> list:
    seen = set()
    out = []
    for c in items:
        if (c.label, c.kind) not in seen:
            seen.add((c.label, c.kind))
            out.append(c)
    return out


def _context(p_item, rel: int) -> str:
    """expr, type or pattern: what kind of name stands at the cursor."""
    for node in chain(p_item, rel + 1):
        if isinstance(node, (A.TensorTypeExpr, A.NamedTypeExpr, A.DtypeExpr)):
            return "type"
        if isinstance(node, A.Pattern):
            return "pattern"
    return "expr"


def _field_completions(a, item, p_item, res, name_rel: int) -> list:
    """Fields of the model before the dot at item-relative `name_rel`."""
    env = a.env
    model = None
    if p_item is not None and res is not None:
        for node in chain(p_item, name_rel + 1):
            if isinstance(node, A.FieldRead) and node.name_pos[0] == name_rel:
                t = res.types.get(id(node.obj))
                if isinstance(t, ModelT):
                    model = t.name
    if model is None:
        # the function does not parse even patched: read the name's annotation
        m = re.search(r"([A-Za-z_]\w*)\s*\.\s*$", item.text[:name_rel])
        if m:
            ann = re.search(rf"\b{m.group(1)}\s*:\s*([A-Za-z_]\w*)", item.text)
            if ann and ann.group(1) in env.models:
                model = ann.group(1)
    info = env.models.get(model) if model else None
    if info is None:
        return []
    return [Completion(n, "field", render_type(env, fi.type), item_doc(info.item), sort="0")
            for n, fi in info.fields.items()]


# ---------------------------------------------------------------- calls and signature help
@dataclass
class CallContext:
    callee: str
    piped: bool  # written `x |> f(…)`: the piped value is the first argument
    index: int  # commas before the cursor in the call
    keyword: Optional[str]  # `name=` being written
    in_pattern: bool


_TOKEN = re.compile(r'"[^"\n]*"?|#[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\|>|->|==|!=|<=|>=|[()\[\],=:.]|\S', re.S)


def enclosing_call(text: str, env) -> Optional[CallContext]:
    """The innermost call of a known function open at the end of `text` (an item's
    text up to the cursor)."""
    stack: list = []
    toks = [t for t in _TOKEN.findall(text) if not t.startswith("#")]
    for i, tok in enumerate(toks):
        if tok == "(":
            prev = toks[i - 1] if i > 0 else ""
            before = toks[i - 2] if i > 1 else ""
            callee = prev if re.fullmatch(r"[A-Za-z_]\w*", prev) and before != "." else None
            stack.append({"k": "(", "callee": callee, "piped": before == "|>", "n": 0, "kw": None, "pat": False})
        elif tok == "[":
            stack.append({"k": "[", "callee": None})
        elif tok in ")]":
            if stack:
                stack.pop()
        elif not stack:
            continue
        elif tok == "," and stack[-1]["k"] == "(":
            stack[-1]["n"] += 1
            stack[-1]["kw"] = None
        elif tok == "=" and stack[-1]["k"] == "(" and i > 1 and toks[i - 2] in ("(", ","):
            stack[-1]["kw"] = toks[i - 1]
        elif tok in (":", "->") and stack[-1]["k"] == "(":
            stack[-1]["pat"] = True
    in_group = False
    for fr in reversed(stack):
        if fr["k"] == "(" and fr["callee"] and (fr["callee"] in BUILTINS or env.sig(fr["callee"]) is not None):
            return CallContext(fr["callee"], fr["piped"], fr["n"], fr["kw"], fr["pat"] or in_group)
        if fr["k"] == "(":
            in_group = True  # an axis group of a pattern
    return None


def _call_params(a, callee: str) -> list:
    b = BUILTINS.get(callee)
    if b is not None:
        return [(n, text) for n, text in b.parts if n not in ("*", "->")]
    sig = a.env.sig(callee)
    if sig is None:
        return []
    return [(p.name, render_type(a.env, p.type)) for p in sig.params]


def signature_help(ws, path: str, offset: int) -> Optional[SignatureHelp]:
    path = ws.norm(path)
    a = ws.analyze(path)
    if a is None:
        return None
    item = item_at(a.file, offset)
    if item is None:
        return None
    call = enclosing_call(a.file.text[item.offset:offset], a.env)
    if call is None:
        return None
    b = BUILTINS.get(call.callee)
    if b is not None:
        parts = b.parts
        doc = b.doc
        ret = ""
    else:
        sig = a.env.sig(call.callee)
        it = sig.item
        if not isinstance(it, A.FnItem):
            return None
        parts = [(p.name, " ".join(it.src(p.pos).split())) for p in it.params]
        ret = " -> " + " ".join(it.src(it.ret.pos).split()) if it.ret is not None else ""
        doc = item_doc(it)
    label, ranges = signature_label(call.callee, parts, ret)
    names = [n for n, _ in parts]
    active: Optional[int]
    if call.in_pattern and "->" in names:
        active = names.index("->")
    elif call.keyword is not None:
        active = names.index(call.keyword) if call.keyword in names else None
    elif b is not None and b.variadic:
        active = 0
    else:
        active = call.index + (1 if call.piped else 0)
        if b is not None and b.pattern and active >= len(names) - 1:
            active = len(names) - 1
        if active >= len(names):
            active = None
    return SignatureHelp(label, ranges, active, doc)

