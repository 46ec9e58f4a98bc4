"""Each builtin's PyTorch lowering, as its row of the builtin table (`builtins.py`) names it.

A lowering is a plain function `lower(e, n) -> str`: `e` is the code generator seen
through the small `Emitter` interface below, `n` the builtin's graph node; it returns the
Python expression of the call. The code generator (`compile/codegen.py`) implements
`Emitter` and dispatches through the row (`BUILTINS[n.op].lower(emitter, n)`), so this
module imports nothing above `check/`: what needs the compiler's layout, plan or
attention plan is a method of the interface.
"""
from __future__ import annotations

from typing import Callable, Optional, Protocol

from . import rope_scaling
from .types import ScalarT, TensorT

Lowering = Callable[["Emitter", object], str]


class Emitter(Protocol):
    """What a lowering may ask of the code generator."""

    device: str  # the device expression of the generated method

    def arg(self, n, name: str):
        """The node bound to a parameter of the call, or None."""

    def ex(self, node) -> str:
        """The code of a node."""

    def atom(self, code: str) -> str:
        """code, parenthesized unless it is one primary expression."""

    def over(self, n) -> list:
        """The positions of `over=`'s axes in the tensor `x`."""

    def dims(self, positions: list) -> str:
        """The `dim` argument for these positions."""

    def scalar(self, n, name: str, number: bool = False) -> str:
        """The code of a scalar keyword, else the builtin's default."""

    def default(self, builtin: str, param: str):
        """The default of a builtin's parameter."""

    def aligned(self, node, axes) -> str:
        """A node's code with its axes moved to these axes."""

    def rotary_tables(self, pos, x):
        """The model's rotary table (cos, sin) aligned to x, when its ropes rotate by one
        (compile/rotary_plan.py), else None."""

    def weight_over(self, n, w, positions: list) -> str:
        """A normalization's weight `[over]` aligned to x's axes."""

    def need_size(self, size, where) -> str:
        """The code of a size known at export."""

    def use_helper(self, name: str) -> None:
        """Have the generated file define this prelude helper."""

    def loaded_float(self) -> str:
        """The code of the source's f32: the float type the model was loaded in."""

    def module_field(self, node, kinds) -> Optional[str]:
        """`obj.attr` when node reads a field that is a module of one of these kinds."""

    def bias_folded(self, w) -> bool:
        """True when the nn.Linear holding weight w holds its bias too."""

    def is_lm_embedding(self, n) -> bool:
        """True when n is the language model's token embedding (`inputs_embeds`)."""

    def lm_attention(self, n) -> Optional[str]:
        """A language model's attention call (its own heads, KV cache), else None."""

    def matmul(self, n, a, b) -> str: ...

    def elementwise(self, n, sym: str, a, b) -> str: ...

    def same_order(self, r, first, i: int) -> str:
        """r's code with its axes in first's order, the joined axis at position i."""

    def pattern(self, n):
        """The call's pattern lowering (`compile/layout.py`'s PatternLowering)."""

    def expert_einsum(self, n) -> Optional[str]:
        """An einsum over one `take`'s gather, computing only the chosen experts, else None."""

    def error(self, message: str, where) -> Exception:
        """The compile error to raise."""


# ---------------------------------------------------------------- templates
# the elementwise builtins on plain numbers (`sqrt(Dh)`): Python's math
SCALAR_FUNCTIONS = {"exp": "math.exp({x})", "log": "math.log({x})", "sqrt": "math.sqrt({x})",
                    "rsqrt": "1 / math.sqrt({x})", "tanh": "math.tanh({x})", "sigmoid": "1 / (1 + math.exp(-{x}))",
                    "relu": "max({x}, 0.0)", "gelu": "{x} * (1 + math.erf({x} / math.sqrt(2))) / 2",
                    "gelu_tanh": "{x} * (1 + math.tanh(math.sqrt(2 / math.pi) * ({x} + 0.044715 * {x} ** 3))) / 2",
                    "silu": "{x} / (1 + math.exp(-{x}))", "abs": "abs({x})", "neg": "-{x}", "square": "{x} ** 2",
                    "sin": "math.sin({x})", "cos": "math.cos({x})"}
REDUCTIONS = {"sum": "{x}.sum({dims})", "mean": "{x}.mean({dims})", "max": "{x}.amax({dims})",
              "min": "{x}.amin({dims})", "logsumexp": "torch.logsumexp({x}, {dims})"}


def elementwise(name: str, template: str) -> Lowering:
    """An elementwise builtin: its row's template on a tensor, Python's math on a number."""
    def lower(e: Emitter, n) -> str:
        x = e.arg(n, "x")
        if isinstance(x.type, ScalarT):
            scalar = SCALAR_FUNCTIONS[name]
            call = scalar.endswith("({x})") and scalar.count("{x}") == 1
            return scalar.format(x=e.ex(x) if call else e.atom(e.ex(x)))
        return template.format(x=e.ex(x) if template.startswith(("torch.", "nn.")) else e.atom(e.ex(x)))
    return lower


def reduction(name: str) -> Lowering:
    template = REDUCTIONS[name]

    def lower(e: Emitter, n) -> str:
        x = e.arg(n, "x")
        over = n.attrs.get("over")
        code = e.atom(e.ex(x))
        if not over:
            if name == "logsumexp":
                return f"torch.logsumexp({code}.flatten(), 0)"
            return template.format(x=code, dims="")
        # every axis of each name goes, as the checker's type says (`[b n n]` over n is `[b]`)
        ps = [i for i, a in enumerate(x.type.axes) if a.name in over]
        return template.format(x=code, dims=e.dims(ps))
    return lower


def method_over(method: str) -> Lowering:
    """`x.<method>(<the position of over>)`: argmax, softmax, log_softmax."""
    def lower(e: Emitter, n) -> str:
        return f"{e.atom(e.ex(e.arg(n, 'x')))}.{method}({e.over(n)[0]})"
    return lower


# ---------------------------------------------------------------- the others
def rms_norm(e: Emitter, n) -> str:
    x, w = e.arg(n, "x"), e.arg(n, "w")
    ps = e.over(n)
    eps = e.scalar(n, "eps")
    e.use_helper("rms_norm")
    return f"rms_norm({e.ex(x)}, {e.weight_over(n, w, ps)}, {e.dims(ps)}, {eps})"


def layer_norm(e: Emitter, n) -> str:
    x, w, b = e.arg(n, "x"), e.arg(n, "w"), e.arg(n, "b")
    ps = e.over(n)
    eps = e.scalar(n, "eps")
    rank = len(x.type.axes)
    if ps == list(range(rank - len(ps), rank)):
        sizes = ", ".join(e.need_size(x.type.axes[p].size, n.where) for p in ps)
        sizes += "," if len(ps) == 1 else ""
        return f"nn.functional.layer_norm({e.ex(x)}, ({sizes}), {e.ex(w)}, {e.ex(b)}, {eps})"
    e.use_helper("layer_norm")
    return (f"layer_norm({e.ex(x)}, {e.weight_over(n, w, ps)}, {e.weight_over(n, b, ps)}, "
            f"{e.dims(ps)}, {eps})")


def linear(e: Emitter, n) -> str:
    x, w, b = e.arg(n, "x"), e.arg(n, "W"), e.arg(n, "b")
    mod = e.module_field(w, ("linear",))
    if mod is not None:
        if b is None or e.bias_folded(w):
            return f"{mod}({e.ex(x)})"
        return f"{mod}({e.ex(x)}) + {e.atom(e.ex(b))}"  # an nn.Linear without a bias of its own
    parts = [e.ex(x), e.ex(w)] + ([e.ex(b)] if b is not None else [])
    return f"nn.functional.linear({', '.join(parts)})"


def matmul(e: Emitter, n) -> str:
    return e.matmul(n, e.arg(n, "x"), e.arg(n, "w"))


def embedding(e: Emitter, n) -> str:
    ids, table = e.arg(n, "ids"), e.arg(n, "E")
    if e.is_lm_embedding(n):
        return "inputs_embeds"
    mod = e.module_field(table, ("embedding",))
    if mod is not None:
        return f"{mod}({e.ex(ids)})"
    return f"nn.functional.embedding({e.ex(ids)}, {e.ex(table)})"


def one_hot(e: Emitter, n) -> str:
    """f32 (LANGUAGE.md): the model's float type, as its weights were loaded (a linear of a
    one_hot then runs in bfloat16 too, where `.float()` would stop it)."""
    ids = e.arg(n, "ids")
    v = e.need_size(ids.type.dtype.index, n.where)
    return f"nn.functional.one_hot({e.ex(ids)}, {v}).to({e.loaded_float()})"


def rope(e: Emitter, n) -> str:
    x, pos = e.arg(n, "x"), e.arg(n, "pos")
    theta = e.scalar(n, "theta")
    style = n.attrs.get("style", e.default("rope", "style"))
    if "style" in n.attrs["args"] and "style" not in n.attrs:
        raise e.error("rope's style must be written as a string, \"half\" or \"interleaved\"", n.where)
    e.use_helper("rope")
    tables = e.rotary_tables(pos, x)
    if tables is not None:  # the model's one rotary table (compile/rotary_plan.py)
        return f"rotate({e.ex(x)}, {tables[0]}, {tables[1]}, {style!r})"
    p = e.aligned(pos, x.type.axes[:-1])
    extra = ""
    if e.arg(n, "rotary_dims") is not None:
        dims = e.arg(n, "rotary_dims")
        code = e.scalar(n, "rotary_dims")
        extra += f", dims={code if isinstance(dims.type, ScalarT) else f'int({code})'}"
    scaling = rope_scaling_code(e, n)
    if scaling is not None:
        extra += f", scaling={scaling}"
    return f"rope({e.ex(x)}, {p}, {theta}, {style!r}{extra})"


def rope_scaling_code(e: Emitter, n) -> Optional[str]:
    """A rope's scaling as the prelude's `inv_frequencies` reads it: a dict in
    transformers' spelling (`rope_parameters` without the theta), or None for none."""
    kind = n.attrs.get("scaling", "none")
    if kind == "none":
        return None
    fields = [f'"rope_type": {kind!r}'] + [
        f"{rope_scaling.HF_KEY.get(k, k)!r}: {e.scalar(n, k, number=True)}" for k in rope_scaling.SCALINGS[kind]]
    return "{" + ", ".join(fields) + "}"


def softcap(e: Emitter, n) -> str:
    c = e.atom(e.scalar(n, "c", number=True))
    return f"{c} * torch.tanh({e.atom(e.ex(e.arg(n, 'x')))} / {c})"


def scaled_dot_product_attention(e: Emitter, n) -> str:
    lm = e.lm_attention(n)
    if lm is not None:
        return lm
    q, k, v = e.arg(n, "q"), e.arg(n, "k"), e.arg(n, "v")
    parts = [e.ex(q), e.ex(k), e.ex(v)]
    mask = e.arg(n, "attn_mask")
    if mask is not None:
        scores = tuple(q.type.axes[:-1]) + (k.type.axes[-2],)
        code = e.aligned(mask, scores)
        if e.arg(n, "window") is not None:  # the causal mask narrowed to the window (v0.2)
            e.use_helper("window_mask")
            code = f"window_mask({code}, {e.scalar(n, 'window')})"
        parts.append(f"attn_mask={code}")
    if e.arg(n, "scale") is not None:
        parts.append(f"scale={e.scalar(n, 'scale', number=True)}")
    if q.type.axes[-3].size != k.type.axes[-3].size:
        parts.append("enable_gqa=True")
    written = False  # PyTorch's has no softcap and no sinks: the prelude's, written out
    if e.arg(n, "softcap") is not None:
        parts.append(f"softcap={e.scalar(n, 'softcap', number=True)}")
        written = True
    if e.arg(n, "sinks") is not None:
        parts.append(f"sinks={e.ex(e.arg(n, 'sinks'))}")
        written = True
    if written:
        e.use_helper("written_attention")
        return f"written_attention({', '.join(parts)})"
    return f"nn.functional.scaled_dot_product_attention({', '.join(parts)})"


def topk(e: Emitter, n) -> str:
    """The prelude's stable topk: ties keep the lower index first, as the language says."""
    x = e.arg(n, "x")
    e.use_helper("topk")
    return f"topk({e.ex(x)}, {e.need_size(n.type.items[0].axes[e.over(n)[0]].size, n.where)}, {e.over(n)[0]})"


def take(e: Emitter, n) -> str:
    """`t[idx]` with `over` moved first: idx's axes, then t's others in order."""
    t, idx = e.arg(n, "t"), e.arg(n, "idx")
    d = t.type.index_of(n.attrs["over"][0])
    code = e.atom(e.ex(t))
    return f"{code}[{e.ex(idx)}]" if d == 0 else f"{code}.movedim({d}, 0)[{e.ex(idx)}]"


def masked_fill(e: Emitter, n) -> str:
    x, mask, value = e.arg(n, "x"), e.arg(n, "mask"), e.arg(n, "value")
    return f"{e.atom(e.ex(x))}.masked_fill({e.aligned(mask, x.type.axes)}, {e.ex(value)})"


def scale(e: Emitter, n) -> str:
    return e.elementwise(n, "*", e.arg(n, "x"), e.arg(n, "s"))


def to(e: Emitter, n) -> str:
    return f"{e.atom(e.ex(e.arg(n, 'x')))}.to({e.ex(e.arg(n, 'dtype'))})"


def minmax(fn: str, clamp: str) -> Lowering:
    def lower(e: Emitter, n) -> str:
        a, b = e.arg(n, "a"), e.arg(n, "b")
        if isinstance(a.type, ScalarT) and isinstance(b.type, ScalarT):
            return f"{fn[:3]}({e.ex(a)}, {e.ex(b)})"
        if isinstance(b.type, ScalarT) or isinstance(a.type, ScalarT):
            t, s = (a, b) if isinstance(b.type, ScalarT) else (b, a)
            return f"torch.clamp({e.ex(t)}, {clamp}={e.ex(s)})"
        axes = n.type.axes
        return f"torch.{fn}({e.aligned(a, axes)}, {e.aligned(b, axes)})"
    return lower


def where(e: Emitter, n) -> str:
    c, a, b = e.arg(n, "cond"), e.arg(n, "a"), e.arg(n, "b")
    axes = n.type.axes if isinstance(n.type, TensorT) else ()
    parts = [e.aligned(x, axes) for x in (c, a, b)]
    return f"torch.where({', '.join(parts)})"


def concat(e: Emitter, n) -> str:
    rest = n.attrs["rest"]
    first = rest[0].type
    i = first.index_of(n.attrs["over"][0])
    parts = [e.ex(rest[0])] + [e.same_order(r, first, i) for r in rest[1:]]
    return f"torch.cat([{', '.join(parts)}], dim={i})"


def arange(e: Emitter, n) -> str:
    return f"torch.arange({e.ex(e.arg(n, 'n'))}, device={e.device})"


def rearrange(e: Emitter, n) -> str:
    return e.pattern(n).rearrange(e.atom(e.ex(e.arg(n, "x"))))


def repeat(e: Emitter, n) -> str:
    return e.pattern(n).repeat(e.atom(e.ex(e.arg(n, "x"))))


def split(e: Emitter, n) -> str:
    return e.pattern(n).split(e.atom(e.ex(e.arg(n, "x"))))


def einsum(e: Emitter, n) -> str:
    sparse = e.expert_einsum(n)  # over a `take`'s gather: only the chosen experts (compile/experts.py)
    if sparse is not None:
        return sparse
    return e.pattern(n).einsum([e.atom(e.ex(r)) for r in n.attrs["rest"]])
