"""What each builtin computes, written directly in torch, one function per builtin.

Each function takes a `Call` (the call's argument values, their checked types and the
result's type) and returns the value. Defaults of keywords come from the builtin table
(`check/builtins.py`), the one place both the evaluator and the code generator read;
nothing else is shared with the code generator. Written for being obviously right,
not fast.
"""
from __future__ import annotations

import math

from ..check.builtins import BUILTINS
from ..check.types import ScalarT, TensorT
from .axes import align, occurrences, positions


def _torch():
    import torch  # torch is not a dependency of the core: imported only when evaluating
    return torch


def _names(t) -> list:
    return [a.name for a in t.axes] if isinstance(t, TensorT) else []


def _is_tensor(v) -> bool:
    return isinstance(v, _torch().Tensor)


def _unary(tensor_fn, number_fn):
    def run(c):
        x = c.v("x")
        return tensor_fn(x) if _is_tensor(x) else number_fn(x)
    return run


def _gelu_number(x):
    return x * (1 + math.erf(x / math.sqrt(2))) / 2


def _gelu_tanh(x, tanh):
    return 0.5 * x * (1 + tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _unaries() -> dict:
    t = _torch()
    return {
        "exp": _unary(t.exp, math.exp),
        "log": _unary(t.log, math.log),
        "sqrt": _unary(t.sqrt, math.sqrt),
        "rsqrt": _unary(lambda x: 1 / t.sqrt(x), lambda x: 1 / math.sqrt(x)),
        "tanh": _unary(t.tanh, math.tanh),
        "sigmoid": _unary(lambda x: 1 / (1 + t.exp(-x)), lambda x: 1 / (1 + math.exp(-x))),
        "relu": _unary(lambda x: t.where(x > 0, x, t.zeros_like(x)), lambda x: max(x, 0.0)),
        "gelu": _unary(lambda x: x * (1 + t.erf(x / math.sqrt(2))) / 2, _gelu_number),
        "gelu_tanh": _unary(lambda x: _gelu_tanh(x, t.tanh), lambda x: _gelu_tanh(x, math.tanh)),
        "silu": _unary(lambda x: x / (1 + t.exp(-x)), lambda x: x / (1 + math.exp(-x))),
        "abs": _unary(t.abs, abs),
        "neg": _unary(lambda x: -x, lambda x: -x),
        "square": _unary(lambda x: x * x, lambda x: x * x),
        "sin": _unary(t.sin, math.sin),
        "cos": _unary(t.cos, math.cos),
    }


def _both(c, a="a", b="b"):
    out = _names(c.out)
    return align(c.v(a), _names(c.t(a)), out), align(c.v(b), _names(c.t(b)), out)


def _maximum(c):
    x, y = _both(c)
    if not _is_tensor(x) and not _is_tensor(y):
        return max(x, y)
    t = _torch()
    x, y = (v if _is_tensor(v) else t.tensor(v, dtype=_dtype_of(x, y)) for v in (x, y))
    return t.maximum(x, y)


def _minimum(c):
    x, y = _both(c)
    if not _is_tensor(x) and not _is_tensor(y):
        return min(x, y)
    t = _torch()
    x, y = (v if _is_tensor(v) else t.tensor(v, dtype=_dtype_of(x, y)) for v in (x, y))
    return t.minimum(x, y)


def _dtype_of(*values):
    return next(v.dtype for v in values if _is_tensor(v))


def _where(c):
    out = _names(c.out)
    cond = align(c.v("cond"), _names(c.t("cond")), out)
    a, b = _both(c)
    t = _torch()
    if not _is_tensor(cond):
        return a if cond else b
    return t.where(cond, a, b)


def _reduction(name):
    def run(c):
        x, over = c.v("x"), c.over()
        dims = positions(_names(c.t("x")), over) if over is not None else list(range(x.dim()))
        if not dims:
            return x
        t = _torch()
        if name == "sum":
            return x.sum(dim=dims)
        if name == "mean":
            return x.mean(dim=dims)
        if name == "max":
            return x.amax(dim=dims)
        if name == "min":
            return x.amin(dim=dims)
        return t.logsumexp(x, dim=dims)
    return run


def _one_axis(c) -> int:
    return _names(c.t("x")).index(c.over()[0])


def _argmax(c):
    return c.v("x").argmax(dim=_one_axis(c))


def _topk(c):
    """The K largest along `over`, largest first, ties by the lower index: a stable sort."""
    x, d = c.v("x"), _one_axis(c)
    k = int(c.v("k"))
    values, indices = _torch().sort(x, dim=d, descending=True, stable=True)
    return values.narrow(d, 0, k), indices.narrow(d, 0, k)


def _take(c):
    """`[idx's axes…, t's other axes]`: t's `over` axis moved first, indexed by idx."""
    t = c.v("t")
    d = _names(c.t("t")).index(c.over()[0])
    return t.movedim(d, 0)[c.v("idx")]


def _softmax(c):
    x = c.v("x")
    d = _one_axis(c)
    e = (x - x.amax(dim=d, keepdim=True)).exp()
    return e / e.sum(dim=d, keepdim=True)


def _log_softmax(c):
    x = c.v("x")
    d = _one_axis(c)
    shifted = x - x.amax(dim=d, keepdim=True)
    return shifted - shifted.exp().sum(dim=d, keepdim=True).log()


def _param_over(c, p):
    """A norm's weight or bias, `[over]` in `over`'s order, placed on x's axes."""
    over = c.over()
    return align(c.v(p), over, _names(c.t("x")))


def _rms_norm(c):
    x = c.v("x")
    dims = positions(_names(c.t("x")), c.over())
    ms = (x * x).mean(dim=dims, keepdim=True)
    return x / _torch().sqrt(ms + c.v("eps")) * _param_over(c, "w")


def _layer_norm(c):
    x = c.v("x")
    dims = positions(_names(c.t("x")), c.over())
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    return (x - mean) / _torch().sqrt(var + c.v("eps")) * _param_over(c, "w") + _param_over(c, "b")


def _linear(c):
    x, w = c.v("x"), c.v("W")
    y = _torch().einsum("...i,oi->...o", x, w)
    b = c.v("b")
    return y + b if b is not None else y


def matmul_values(x, w, xt, wt, out):
    """`[… K] @ [K N]` with the batch axes of both matched by name (one einsum)."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY")
    out_names = _names(out)
    has_n = len(wt.axes) >= 2
    batch = out_names[:-1] if has_n else out_names
    keys = occurrences(batch)
    batch_letters = [next(letters) for _ in keys]
    k = next(letters)
    n = next(letters) if has_n else ""

    def side(names):
        return "".join(batch_letters[keys.index(key)] for key in occurrences(names))
    left = side(_names(xt)[:-1]) + k
    right = (side(_names(wt)[:-2]) + k + n) if has_n else k
    return _torch().einsum(f"{left},{right}->{''.join(batch_letters)}{n}", x, w)


def _matmul(c):
    return matmul_values(c.v("x"), c.v("w"), c.t("x"), c.t("w"), c.out)


def _embedding(c):
    return c.v("E")[c.v("ids")]


def _one_hot(c):
    ids = c.v("ids")
    v = c.size(c.out.axes[-1].size)
    t = _torch()
    return (ids.unsqueeze(-1) == t.arange(v, device=ids.device)).to(c.float_dtype())


def _number(v):
    return float(v.item()) if _is_tensor(v) else float(v)


def _inv_freq(c, theta, rotated: int, f):
    """LANGUAGE.md §6.1: theta^(-2i/R), changed as `scaling=` says (the meaning of
    transformers' rope_type of the same name); and the factor of cos and sin."""
    t = _torch()
    inv = 1.0 / (theta ** (t.arange(0, rotated, 2, dtype=f) / rotated))
    kind = c.v("scaling")
    if kind == "none":
        return inv, 1.0
    factor = _number(c.v("factor"))
    if kind == "linear":
        return inv / factor, 1.0
    original = _number(c.v("original_positions"))
    if kind == "llama3":
        low, high = _number(c.v("low_freq_factor")), _number(c.v("high_freq_factor"))
        wavelength = 2 * math.pi / inv
        smooth = (original / wavelength - low) / (high - low)
        blended = (1 - smooth) * inv / factor + smooth * inv
        return t.where(wavelength < original / high, inv,
                       t.where(wavelength > original / low, inv / factor, blended)), 1.0
    assert kind == "yarn", kind
    base = _number(theta)

    def dim_of(rotations):
        return rotated * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(dim_of(_number(c.v("beta_fast")))), 0)
    high = min(math.ceil(dim_of(_number(c.v("beta_slow")))), rotated - 1)
    if low == high:
        high += 0.001
    ramp = ((t.arange(rotated // 2, dtype=f) - low) / (high - low)).clamp(0, 1)  # 1: interpolated
    return inv / factor * ramp + inv * (1 - ramp), _number(c.v("attention_factor"))


def _rope(c):
    t = _torch()
    x, theta, style = c.v("x"), c.v("theta"), c.v("style")
    width = x.shape[-1]
    rotated = int(_number(c.v("rotary_dims"))) if c.v("rotary_dims") is not None else width
    if rotated < width:  # the first R features of each head rotated, the others passed through
        return t.cat((_rotate(c, x[..., :rotated], theta, style), x[..., rotated:]), -1)
    return _rotate(c, x, theta, style)


def _rotate(c, x, theta, style):
    t = _torch()
    width = x.shape[-1]
    f = c.float_dtype()
    pos = align(c.v("pos"), _names(c.t("pos")), _names(c.t("x"))[:-1]).to(f)
    inv_freq, attention = _inv_freq(c, theta, width, f)
    angles = pos.unsqueeze(-1) * inv_freq  # [… n width/2]
    cos, sin = angles.cos() * attention, angles.sin() * attention
    if style == "half":
        a, b = x[..., : width // 2], x[..., width // 2:]
        return t.cat((a * cos - b * sin, b * cos + a * sin), -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return t.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)


def _softcap(c):
    x, cap = c.v("x"), _number(c.v("c"))
    return cap * (_torch().tanh(x / cap) if _is_tensor(x) else math.tanh(x / cap))


def _sdpa(c):
    t = _torch()
    q, k, v = c.v("q"), c.v("k"), c.v("v")
    hq, hk = q.shape[-3], k.shape[-3]
    if hq != hk:  # each key/value head serves hq/hk query heads, in order
        k = k.repeat_interleave(hq // hk, dim=-3)
        v = v.repeat_interleave(hq // hk, dim=-3)
    scale = c.v("scale")
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-1, -2)) * scale
    cap = c.v("softcap")
    if cap is not None:  # v0.3: after scaling, before the mask
        cap = _number(cap)
        scores = cap * t.tanh(scores / cap)
    mask = c.v("attn_mask")
    if mask is not None:
        qt, kt = c.t("q"), c.t("k")
        score_names = _names(qt)[:-1] + [kt.axes[-2].name]
        mask = align(mask, _names(c.t("attn_mask")), score_names)
        window = c.v("window")
        if window is not None:  # a query at i sees the keys at i - W < j <= i
            w = int(window.item()) if isinstance(window, t.Tensor) else int(window)
            rows, cols = scores.shape[-2], scores.shape[-1]
            i = t.arange(rows).unsqueeze(1)
            j = t.arange(cols).unsqueeze(0)
            mask = mask & (j > i - w)
        scores = scores.masked_fill(~mask, float("-inf"))
    sinks = c.v("sinks")
    if sinks is None:
        return scores.softmax(-1) @ v
    # v0.3 sinks: one more logit per head, Z[h], in the softmax; its probability dropped
    sink = sinks.to(scores.dtype).reshape(-1, 1, 1).expand(scores.shape[:-1] + (1,))
    weights = t.cat([scores, sink], dim=-1).softmax(-1)[..., :-1]
    return weights @ v


def _masked_fill(c):
    x = c.v("x")
    mask = align(c.v("mask"), _names(c.t("mask")), _names(c.t("x")))
    return x.masked_fill(mask.expand(x.shape), c.v("value"))


def _scale(c):
    x, s = _both(c, "x", "s")
    return x * s


def _to(c):
    return c.v("x").to(c.v("dtype"))


def _concat(c):
    t = _torch()
    over = c.over()[0]
    first = c.rest_types[0]
    names = _names(first)
    i = names.index(over)
    others = [n for n in names if n != over]
    parts = []
    for v, ty in zip(c.rest, c.rest_types):
        tn = _names(ty)
        j = tn.index(over)
        rest = [p for p in range(len(tn)) if p != j]
        assert [tn[p] for p in rest] == others
        parts.append(v.permute(*(rest[:i] + [j] + rest[i:])))
    return t.cat(parts, dim=i)


def _arange(c):
    return _torch().arange(int(c.v("n")))


def _rearrange(c):
    return c.pattern().rearrange(c.v("x"), c.pattern_info())


def _repeat(c):
    return c.pattern().rearrange(c.v("x"), c.pattern_info())


def _split(c):
    return c.pattern().rearrange(c.v("x"), c.pattern_info(), drop_first_int=True)


def _einsum(c):
    return c.pattern().einsum(c.rest, c.pattern_info())


def semantics() -> dict:
    """name -> function(Call): every builtin of the table."""
    table = dict(_unaries())
    table.update({"maximum": _maximum, "minimum": _minimum, "where": _where, "argmax": _argmax,
                  "softmax": _softmax, "topk": _topk, "take": _take, "log_softmax": _log_softmax, "rms_norm": _rms_norm,
                  "layer_norm": _layer_norm, "linear": _linear, "matmul": _matmul, "embedding": _embedding,
                  "one_hot": _one_hot, "rope": _rope, "softcap": _softcap, "scaled_dot_product_attention": _sdpa,
                  "masked_fill": _masked_fill, "scale": _scale, "to": _to, "concat": _concat,
                  "arange": _arange, "rearrange": _rearrange, "split": _split, "repeat": _repeat,
                  "einsum": _einsum})
    for n in ("sum", "mean", "max", "min", "logsumexp"):
        table[n] = _reduction(n)
    missing = set(BUILTINS) - set(table)
    assert not missing, f"the evaluator has no semantics for {sorted(missing)}"
    return table


def is_scalar_type(t) -> bool:
    return isinstance(t, ScalarT) or (isinstance(t, TensorT) and not t.axes)
