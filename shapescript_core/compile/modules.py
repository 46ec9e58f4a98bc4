"""The nn.Module classes: one per model, its fields as parameters and submodules, its
functions as methods. Targets (hf/) wrap the root class in their own base classes."""
from __future__ import annotations

import os
from typing import Optional

from ..check.types import ModelT, StackT, TensorT
from ..syntax import ast as A
from .codegen import ATTENTION_KWARGS, TORCH_DTYPES, Generator, MethodGen
from ..escape import EscapeError, py_comment, py_docstring, py_number, shown
from .graph import CompileError
from .plan import py_name

INDENT = "    "


def indent(lines: list, n: int = 1) -> list:
    pad = INDENT * n
    return [pad + line if line else "" for line in lines]


def where(item) -> str:
    return f"{os.path.basename(item.path)}"


def source_line(prog, item, pos) -> int:
    f = prog.db.file(item.path)
    return f.lines.line_of(item.offset + pos[0]) + 1 if f is not None else 0


def field_decl(gen: Generator, model: str, fname: str, f, layer_idx: Optional[str]) -> list:
    """The __init__ line(s) of one field, or [] when the target holds it elsewhere."""
    plan = gen.plan
    fp = plan.fields[(model, fname)]
    comment = f"  # {py_comment(f'{fname}: {_field_src(f)}')}"
    if fp.kind == "model":
        sub = gen.classes[f.type.name]
        arg = ""
        if layer_idx is not None and gen.attention_count(f.type.name):
            arg = f", {layer_idx}"
        return [f"self.{fp.attr} = {sub.name}(config{arg}){comment}"]
    if fp.kind == "stack":
        sub = gen.classes[f.type.model]
        count = gen.size_code(f.type.count)
        per = gen.attention_count(f.type.model)
        arg = ""
        if layer_idx is not None and per:
            step = "i" if per == 1 else f"i * {per}"
            arg = f", {step}" if layer_idx == "0" else f", {layer_idx} + {step}"
        pipe = gen.parallel.pipeline
        if gen.flavor == "vllm" and pipe is not None and model == plan.root and fp.attr == pipe.layers:
            # this pipeline stage's layers; a PPMissingLayer for the others'
            return ["pp = get_pp_group()",
                    f"self.start_layer, self.end_layer = get_pp_indices({count}, pp.rank_in_group, pp.world_size)",
                    f"self.{fp.attr} = nn.ModuleList([{sub.name}(config{arg}) if self.start_layer <= i < self.end_layer "
                    f"else PPMissingLayer() for i in range({count})]){comment}"]
        return [f"self.{fp.attr} = nn.ModuleList([{sub.name}(config{arg}) for i in range({count})]){comment}"]
    if fp.kind in ("lm_head", "bias"):
        return []
    t = f.type
    sizes = field_sizes(gen, f)
    if fp.kind == "linear":
        bias = "True" if fp.bias else "False"
        k = gen.parallel.parts((model, fname))
        if k > 1:  # a packed param: one linear per part (compile/parallel_plan.py)
            gen.helpers.add("parts")
            rows = f"({sizes[0]}) // {k}" if not sizes[0].isidentifier() else f"{sizes[0]} // {k}"
            if gen.flavor == "vllm" and gen.lm is not None:
                layers = [_parallel_linear(gen, (model, fname), [rows, sizes[1]], bias, i) for i in range(k)]
                held = f"[{layers[0]} for _ in range({k})]" if len(set(layers)) == 1 else f"[{', '.join(layers)}]"
                return [f"self.{fp.attr} = Parts({held}){comment}"]
            return [f"self.{fp.attr} = Parts([nn.Linear({sizes[1]}, {rows}, bias={bias}) for _ in range({k})]){comment}"]
        if gen.flavor == "vllm" and gen.lm is not None:
            return [f"self.{fp.attr} = {_parallel_linear(gen, (model, fname), sizes, bias)}{comment}"]
        return [f"self.{fp.attr} = nn.Linear({sizes[1]}, {sizes[0]}, bias={bias}){comment}"]
    if fp.kind == "embedding" and gen.flavor == "vllm" and gen.lm is not None and \
            (model, fname) == (gen.plan.root, gen.lm.table):
        embed = f"VocabParallelEmbedding({sizes[0]}, {sizes[1]})"
        if gen.parallel.pipeline is None:
            return [f"self.{fp.attr} = {embed}{comment}"]
        # the first pipeline stage embeds; the last holds the table too when the output layer reads it
        keep = "pp.is_first_rank or pp.is_last_rank" if gen.lm.tied else "pp.is_first_rank"
        return ["pp = get_pp_group()", f"self.{fp.attr} = {embed} if {keep} else PPMissingLayer(){comment}"]
    if fp.kind == "embedding":
        return [f"self.{fp.attr} = nn.Embedding({sizes[0]}, {sizes[1]}){comment}"]
    fused = gen.fused_fields.get((model, fname))
    if fused is not None:  # v0.3: vLLM's fused mixture holds the experts (arch/fused_experts.py)
        return _fused_decl(gen, fused) if fname == fused.down else []
    axis = gen.experts.axes.get((model, fname))
    if axis is not None:  # v0.3: this rank's share of every expert's width (compile/expert_parallel.py)
        gen.helpers.add("expert_shard")
        local = list(sizes)
        local[axis] = f"({sizes[axis]}) // get_tensor_model_parallel_world_size()"
        return [f"self.{fp.attr} = nn.Parameter(torch.empty({', '.join(local)})){comment}",
                f"self.{fp.attr}.weight_loader = expert_shard({axis})"]
    return [f"self.{fp.attr} = nn.Parameter({_init_code(f, sizes)}){comment}"]


def _fused_decl(gen: Generator, f) -> list:
    """vLLM's fused mixture in place of the experts' three params: the checkpoint's stacked
    experts load into it expert by expert (`fused_shards`: gate w1, up w3, down w2, as
    vLLM names them); it splits them across tensor-parallel ranks itself."""
    attr = {n: gen.plan.fields[(f.model, n)].attr for n in (f.gate, f.up, f.down)}
    shards = {attr[f.gate]: "w1", attr[f.up]: "w3", attr[f.down]: "w2"}
    return [f"self.fused_experts = FusedMoEFactory(num_experts={f.experts}, top_k={f.used}, hidden_size={f.hidden}, "
            f"intermediate_size={f.width}, renormalize={f.renormalize}, "
            f"prefix=f\"shapescript.experts.{{next(EXPERT_LAYERS)}}\")"
            f"  # {py_comment(', '.join((f.gate, f.up, f.down)))}: vLLM's fused mixture of experts",
            f"self.fused_shards = {shards!r}"]


def fused_body(gen: Generator, f, mg) -> list:
    """The body of a function vLLM runs as its fused mixture: the router's logits, then
    the fused layer over the tokens flattened."""
    x = mg.var(f.x)
    fp = gen.plan.fields[(f.model, f.router)]
    bias = f.router_bias
    if fp.kind == "linear":
        logits = f"self.{fp.attr}(flat)"
        if bias is not None and fp.bias != bias:
            logits += f" + self.{gen.plan.fields[(f.model, bias)].attr}"
    else:
        args = [f"self.{fp.attr}"] + ([f"self.{gen.plan.fields[(f.model, bias)].attr}"] if bias is not None else [])
        logits = f"nn.functional.linear(flat, {', '.join(args)})"
    return [f"flat = {x}.reshape(-1, {x}.shape[-1])  # the tokens, one row each: vLLM's fused mixture of experts",
            f"return self.fused_experts(flat, {logits}).reshape({x}.shape)"]


def _parallel_linear(gen: Generator, key, sizes: list, bias: str, part=None) -> str:
    """vLLM's linear for a param (or part `part` of a packed one) by its role
    (compile/parallel_plan.py): split by rows (colwise), by columns (rowwise, the ranks
    summing), or whole on every rank. vLLM's weight loaders shard the checkpoint's tensors."""
    style = gen.parallel.style(key, part)
    common = f"bias={bias}, return_bias=False"
    kv = gen.parallel.kv_heads(key, part)
    if style == "colwise" and kv is not None:  # keys or values: with more ranks than heads, replicas
        heads = gen.size_code(kv.heads_size) if kv.heads_size is not None else str(kv.heads)
        return f"ColumnParallelLinear({sizes[1]}, {sizes[0]}, {common}, **kv_shard({heads}))"
    if style == "colwise":
        return f"ColumnParallelLinear({sizes[1]}, {sizes[0]}, {common})"
    if style == "rowwise":
        return f"RowParallelLinear({sizes[1]}, {sizes[0]}, {common})"
    return f"ReplicatedLinear({sizes[1]}, {sizes[0]}, {common})"


def field_sizes(gen: Generator, f) -> list:
    """A param's sizes as the source writes them (`Hkv * Dh`), in terms of the dims."""
    texpr = f.node.type
    axes = getattr(texpr, "axes", None)
    if axes is None or len(axes) != len(f.type.axes):
        return [gen.size_code(a.size) for a in f.type.axes]
    return [_size_expr(gen, e, top=True) or gen.size_code(a.size) for e, a in zip(axes, f.type.axes)]


def _size_expr(gen: Generator, e, top=False):
    if isinstance(e, A.SInt):
        return str(e.value)
    if isinstance(e, A.SName):
        return gen.dim_names.get(e.name) if gen.prog.dims.get(e.name) is not None else None
    left, right = _size_expr(gen, e.left), _size_expr(gen, e.right)
    if left is None or right is None:
        return None
    op = "//" if e.op == "/" else e.op
    text = f"{left} {op} {right}"
    return text if top else f"({text})"


def _field_src(f) -> str:
    text = f.item.src(f.node.pos)
    return " ".join(text.split(":", 1)[1].split()) if ":" in text else text


def _init_code(f, sizes: list) -> str:
    t: TensorT = f.type
    shape = ", ".join(sizes) if sizes else ""
    dt = t.dtype.name if t.dtype.name != "Index" else "i64"
    dtype = "" if dt == "f32" else f", dtype={TORCH_DTYPES[dt]}"
    init = f.node.init
    grad = "" if dt in ("f16", "bf16", "f32", "f64") else ", requires_grad=False"
    if isinstance(init, A.Name) and init.id in ("ones", "zeros"):
        return f"torch.{init.id}({shape}{dtype}){grad}"
    std = 0.02
    if isinstance(init, A.Call) and init.args and isinstance(init.args[0].value, A.Number):
        std = init.args[0].value.value
    if grad:
        return f"torch.zeros({shape}{dtype}){grad}"
    try:
        return f"torch.randn({shape}{dtype}) * {py_number(std, 'the std of `normal`')}"
    except EscapeError as e:
        raise CompileError(str(e)) from e


def site_decls(gen: Generator, cls, root: bool) -> list:
    """One CausalAttention per attention of this class (language models), each with its
    own layer index: the instance's first index plus the attention's rank."""
    out = []
    base = "" if root else "layer_idx + "
    for k, n in enumerate(cls.sites):
        q = n.attrs["args"]["q"]
        heads = gen.size_code(q.type.axes[-3].size)
        width = gen.size_code(q.type.axes[-1].size)
        scaling = f"{width} ** -0.5"
        if gen.arg_scale(n) is not None:
            fixed = gen.site_scale(n)
            if fixed is not None:
                scaling = repr(fixed)
            elif gen.flavor == "vllm":
                raise CompileError(f"vLLM's attention takes one scale per layer when the model loads, but the "
                                   f"scale of the attention at line {n.where[1]} is not one number known at "
                                   f"export; write it with literals and dims, or pass the same value at every "
                                   f"call", n.where)
            # else: each call passes its scale, which CausalAttention applies to the queries
        groups = gen.plan.attention.site(n).groups
        index = (str(k) if root else ("layer_idx" if k == 0 else f"layer_idx + {k}"))
        attr = cls.site_attrs[id(n)]
        window = ""
        if gen.windows is not None:  # this layer's window, by its type in config.json (windows.py)
            window = (f", sliding_window=config.sliding_window if config.layer_types[{index}] == "
                      f"\"sliding_attention\" else None")
        softcap = gen.site_softcap(n)
        if softcap is not None:  # v0.3: its scores capped (Gemma 2)
            window += f", softcap={softcap!r}"
        out.append(f"self.{attr} = CausalAttention(config, {index}, {heads}, {groups}, {scaling}, {width}{window})"
                   f"  # line {n.where[1]}: {heads} query heads, each key/value head serving {groups}")
    return out


def method_lines(gen: Generator, cls, fn: str) -> list:
    g = gen.prog.fns[fn]
    mg = MethodGen(gen, g, cls)
    body = fused_body(gen, gen.fused[fn], mg) if fn in gen.fused else mg.body()
    params = []
    start = 1 if g.model_param else 0
    for name, t, default in g.params[start:]:
        params.append(f"{mg.var(name)}={mg.as_param(mg.ex(default), t, default.type)}" if default is not None
                      else mg.var(name))
    if fn in gen.attention_fns:
        params.append("attention_mask=None, past_key_values=None, **kwargs")
    line = source_line(gen.prog, g.item, g.item.name_pos)
    doc = py_docstring(f"`fn {g.name}` ({shown(os.path.basename(g.path))}:{line}).")
    head = f"def {cls.methods[fn]}(self{''.join(', ' + p for p in params)}):"
    return [head] + indent([doc] + body)


def class_lines(gen: Generator, model: str, base: str = "nn.Module", init_tail=None, root=False,
                skip_methods=()) -> list:
    cls = gen.classes[model]
    m = gen.prog.model(model)
    item = m.item
    line = source_line(gen.prog, item, item.name_pos)
    count = gen.attention_count(model)
    layer_idx = None
    if gen.lm and count:
        layer_idx = "0" if root else "layer_idx"
    sig = "config" if root or layer_idx is None else "config, layer_idx=0"
    init = [f"def __init__(self, {sig}):", f"{INDENT}super().__init__({'config' if root else ''})"]
    body = [] if root else ["self.config = config"]
    body += site_decls(gen, cls, root)
    offset = len(cls.sites)
    for fname, f in m.fields.items():
        body += field_decl(gen, model, fname, f, _plus(layer_idx, offset))
        offset += _count(gen, f)
    body += list(init_tail or [])
    init += indent(body)
    out = [f"class {cls.name}({base}):", INDENT + py_docstring(f"`model {model}` ({shown(os.path.basename(item.path))}:{line})."), ""]
    out += indent(init)
    for fn in cls.order:
        if fn in skip_methods:
            continue
        out.append("")
        out += indent(method_lines(gen, cls, fn))
    return out


def _plus(layer_idx, offset: int):
    if layer_idx is None:
        return None
    if offset == 0:
        return layer_idx
    return str(offset) if layer_idx == "0" else f"{layer_idx} + {offset}"


def _count(gen: Generator, f) -> int:
    if isinstance(f.type, ModelT):
        return gen.attention_count(f.type.name)
    if isinstance(f.type, StackT):
        return gen.prog.value_of(f.type.count) * gen.attention_count(f.type.model)
    return 0


__all__ = ["class_lines", "method_lines", "indent", "ATTENTION_KWARGS", "py_name", "ModelT", "StackT"]
