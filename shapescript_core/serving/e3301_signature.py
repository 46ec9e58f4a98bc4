"""E3301: a forward function a serving engine can run (vllm and gguf, and every target of
a plain `forward`): the model, the token ids [b n] Index[V], optionally their positions
[b n], other parameters with defaults, and the logits [b n V]. Its check, its message and
note, and its fix (a default for a scalar parameter)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.sizes import Size
from ..check.types import TensorT
from ..diagnostics import Edit, Fix, error


def message(fn: str) -> str:
    return f"`{fn}` isn't a language model's forward function a serving engine can run"


def note(want: str) -> str:
    """`want`: the logits' shape, as far as the signature tells it."""
    return (f"a serving engine calls it with the model, the token ids [b n] Index[V] and optionally "
            f"their positions [b n], and takes the logits {want}; other parameters need defaults")


@dataclass
class SigInfo:
    """The parts of a language model's signature the other checks speak about."""

    model: object  # ParamInfo
    ids: object  # ParamInfo
    positions: Optional[object]
    b: str  # the token axes' names in the signature
    n: str
    vocab: Size


def check_signature(prog, item, sig, env):
    """(E3301 or None, SigInfo or None)."""
    parts = []  # (pos, label) of every offending part, in source order
    fix_list = []
    params = sig.params
    render = env.render
    b = n = None
    vocab = None
    ids = params[1] if len(params) > 1 else None
    if ids is None:
        parts.append((item.params_pos, "no token ids follow the model"))
    else:
        t = ids.type
        ok = (isinstance(t, TensorT) and len(t.axes) == 2 and t.dtype.name == "Index"
              and t.dtype.index is not None)
        if ok:
            b, n = (a.name.single_symbol() for a in t.axes)
            vocab = t.dtype.index
            ok = (b in sig.svars and n in sig.svars and b != n and _is_dim(vocab, env))
        if not ok:
            what = render(t, dtype=True) if isinstance(t, TensorT) else "not a tensor"
            parts.append((ids.node.pos, f"the token ids must be [b n] Index[V], with V a dim; "
                                        f"this is {what}"))
            b = n = None
    positions = None
    for k, p in enumerate(params[2:], start=2):
        if k == 2 and b is not None and _is_positions(p.type, b, n):
            positions = p
            continue
        if p.has_default:
            continue
        label = f"`{p.name}` needs a default"
        if k == 2 and b is not None and isinstance(p.type, TensorT) and _axes_are(p.type, b, n):
            label = (f"positions are [{b} {n}] of i32, i64 or Index[P]; "
                     f"`{p.name}` is {render(p.type, dtype=True)} and needs a default")
        parts.append((p.node.pos, label))
        f = give_default(item, p)
        if f is not None:
            fix_list.append(f)
    ret = sig.ret
    want = f"[{b or 'b'} {n or 'n'} {env.dims.render(vocab) if vocab is not None else 'V'}]"
    ret_ok = (isinstance(ret, TensorT) and len(ret.axes) == 3 and b is not None
              and ret.axes[0].name == Size.sym(b) and ret.axes[1].name == Size.sym(n)
              and ret.axes[2].size == vocab)
    if not ret_ok and item.ret is not None:
        parts.append((item.ret.pos, f"the logits must be {want}"))
    if not parts:
        return None, SigInfo(params[0], ids, positions, b, n, vocab)
    (pos, label), rest = parts[0], parts[1:]
    d = error("E3301", message(item.name), item.span(pos), label)
    for p, lab in rest:
        d.label(item.span(p), lab)
    d.note(note(want))
    for f in fix_list:
        d.fix(f)
    return d, None


def _is_dim(s: Size, env) -> bool:
    syms = s.symbols()
    return bool(syms) and all(env.dims.is_dim(x) for x in syms)


def _axes_are(t: TensorT, b: str, n: str) -> bool:
    return [a.name for a in t.axes] == [Size.sym(b), Size.sym(n)]


def _is_positions(t, b: str, n: str) -> bool:
    return (isinstance(t, TensorT) and _axes_are(t, b, n)
            and (t.dtype.name in ("i32", "i64") or t.dtype.name == "Index"))


# ---------------------------------------------------------------- the fix
def give_default(item, p) -> Fix | None:
    """A scalar parameter after the ids and positions: give it a default (0, 0.0, false)."""
    t = p.type
    if not isinstance(t, TensorT) or t.axes:
        return None
    d = t.dtype
    literal = "false" if d.name == "bool" else "0" if d.is_int else "0.0"
    return Fix.safe(f"Give `{p.name}` a default", Edit.insertion(item.span((p.node.pos[1], p.node.pos[1])),
                                                                   f" = {literal}"))
