"""How a language model splits across ranks: tensor parallelism (each rank holds a share
of every layer) and pipeline parallelism (each rank holds some of the layers).

Decided once from the op graph, read by the Hugging Face config (`base_model_tp_plan`,
`base_model_pp_plan`), the generated code (head counts taken from the weights' local
shapes, the pipeline stages of the base model's forward) and the E3307 check.

Tensor parallelism, as vLLM and transformers do it (Megatron's split): a linear whose
output is per head or per hidden unit is split by rows (`colwise`: each rank computes its
share of the heads or units), the linear that reads those back into the residual stream
is split by columns (`rowwise`: each rank adds its part, and the ranks sum). The roles
come from the data flow, never from names:
- an attention's queries, keys and values traced back (through bindings, rearranges,
  rope, a per-head norm, a repeat of heads, a cast) to a linear: `query`, `key`, `value`,
  colwise; keys and values with one head are `replicate` (every rank needs that head, as
  vLLM's QKVParallelLinear replicates key/value heads);
- a linear reading an attention's output: `output`, rowwise;
- a linear reading `act(linear(x)) * linear(x)` (or `act(linear(x))`): `down`, rowwise,
  and the linears under it `gate` and `up`, colwise.
A param split into parts by a pattern (`split(b n (3 H Dh) -> …)` on the linear's
output features, a fused `w_qkv` or `w_gate_up`) is `packed`: a tp plan shards a
module's rows in contiguous blocks, which would give a rank whole parts rather than its
share of each part, so the generated models hold such a param as its parts (`w_qkv.0`,
`w_qkv.1`, … : one linear per part, the checkpoint one tensor per part, the forward
concatenating their outputs), and each part has its own role and style: the query part
colwise, the key and value parts colwise (or `replicate` with a single key/value head).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..check.types import StackT, TensorT
from .attention_plan import SDPA, _straight
from .graph import Bind, Loop, Ret
from .plan import walk_nodes

COLWISE, ROWWISE, REPLICATE = "colwise", "rowwise", "replicate"
ACTIVATIONS = {"silu", "gelu", "gelu_tanh", "relu", "sigmoid", "tanh"}
PASS_THROUGH = {"rearrange", "rope", "repeat", "to"}  # ops that keep an axis split by heads split


@dataclass
class Role:
    role: str   # query | key | value | output | gate | up | down
    style: str  # colwise | rowwise | replicate
    node: object = None  # a linear that reads it so (for diagnostics)
    heads: Optional[int] = None  # query, key, value: the heads it computes
    heads_size: object = None  # and their Size (`Hkv`), where the tensor has a heads axis


@dataclass
class Packed:
    model: str
    field: str
    parts: int
    node: object  # the `split` that takes it apart
    unit: object = None  # the Size each part holds a multiple of (`F` of `(2 F)`, `H` of `(3 H Dh)`)
    roles: dict = field(default_factory=dict)  # part index -> Role

    def style(self, i: int) -> str:
        r = self.roles.get(i)
        return r.style if r is not None else COLWISE


@dataclass
class Pipeline:
    """The exported function as pipeline stages: statements before the loop over the
    layers (the first stage's), the loop, and statements after it (the last stage's)."""
    loop: object     # the Loop statement
    carried: str     # the one value passed between stages (the hidden states)
    layers: str      # the root's stack field the loop runs over


@dataclass
class ParallelPlan:
    roles: dict = field(default_factory=dict)   # (model, field) -> Role
    packed: list = field(default_factory=list)  # [Packed]
    local_sizes: set = field(default_factory=set)  # Sizes a rank holds a share of: heads, a packed param's parts
    unsplit: list = field(default_factory=list)   # [(node, why)]: attentions a tp plan can't split
    pipeline: Optional[Pipeline] = None
    no_pipeline: Optional[str] = None  # why the function can't be cut into stages

    def style(self, key, part=None) -> str:
        """How the native vLLM model holds a linear (or part `part` of a packed one):
        colwise, rowwise or replicate; everything replicated when some attention can't be
        split (its heads then disagree with vLLM's, which it reports)."""
        if self.unsplit:
            return REPLICATE
        p = self.packed_param(key)
        if p is not None:
            return p.style(part or 0)
        r = self.roles.get(key)
        return r.style if r is not None else REPLICATE

    def kv_heads(self, key, part=None) -> Optional[Role]:
        """The role of a key or value projection (or part), which says its heads; else None."""
        p = self.packed_param(key)
        r = p.roles.get(part or 0) if p is not None else self.roles.get(key)
        return r if r is not None and r.role in ("key", "value") and r.heads is not None else None

    def packed_param(self, key) -> Optional[Packed]:
        return next((p for p in self.packed if (p.model, p.field) == key), None)

    def parts(self, key) -> int:
        """How many parts the generated models hold a param as (1: whole)."""
        p = self.packed_param(key)
        return p.parts if p is not None else 1

    def tp_plan(self, paths: dict) -> dict:
        """`base_model_tp_plan`: module path pattern -> style, for every linear with a role
        and every part of a packed one (`paths`: (model, field) -> the patterns of its
        module under the base model); empty when some attention can't be split (then no
        plan is better than half a one)."""
        if self.unsplit:
            return {}
        out = {}
        for key, r in self.roles.items():
            for p in paths.get(key, ()):
                out[p] = r.style
        for packed in self.packed:
            for p in paths.get((packed.model, packed.field), ()):
                for i in range(packed.parts):
                    out[f"{p}.{i}"] = packed.style(i)
        # vLLM matches patterns as regular expressions from the start of the name, first
        # match wins: a longer name goes first so that `wq` never takes `wq2`
        return dict(sorted(out.items(), key=lambda kv: (-len(kv[0]), kv[0])))


def plan_parallel(prog, plan, attention_count=None) -> ParallelPlan:
    """`attention_count(model)`: the attentions a model holds (the generator counts them)."""
    out = ParallelPlan()
    if plan.lm is None:
        return out
    for g in prog.fns.values():
        _function(prog, plan, g, out)
    out.pipeline, out.no_pipeline = _pipeline(prog, plan, attention_count)
    return out


def _envs(g):
    """For each statement, the bindings before it: id(statement) -> {name: Bind}."""
    last: dict = {}
    envs: dict = {}
    for s in _straight(g.body):
        envs[id(s)] = dict(last)
        if isinstance(s, Bind):
            for t in s.targets:
                last[t] = s
    return envs


# An environment: (the bindings in scope: name -> Bind, a helper's parameters: name ->
# (the caller's node, the caller's environment), the function's bindings before each
# statement: id(statement) -> {name: Bind})


def _origin(prog, node, env):
    """(node, environment) a value comes from, through bindings, helper functions and ops
    that keep heads apart."""
    node, env, _ = _origin_part(prog, node, env)
    return node, env


def _origin_part(prog, node, env):
    """(node, environment, part): as `_origin`, and when the value is one of the results
    of a `split` (`q, k, v = … |> split(…)`), which one (else None)."""
    seen = set()
    while id(node) not in seen:
        seen.add(id(node))
        op = node.op
        args = node.attrs.get("args", {})
        if op == "local":
            binds, params, envs = env
            bind = binds.get(node.attrs["name"])
            if bind is None:
                found = params.get(node.attrs["name"])
                if found is None:
                    return node, env, None
                node, env = found
                continue
            env = (envs[id(bind)], params, envs)
            if len(bind.targets) != 1:  # `q, k, v = … |> split(…)`: the split, and which part
                return bind.value, env, list(bind.targets).index(node.attrs["name"])
            node = bind.value
        elif op == "call":
            callee = prog.fns.get(node.attrs.get("fn"))
            if callee is None or not callee.body or not isinstance(callee.body[-1], Ret):
                return node, env, None
            envs = _envs(callee)
            params = {p: (a, env) for p, a in args.items() if a is not None}
            env = (envs[id(callee.body[-1])], params, envs)
            node = callee.body[-1].value
        elif op in PASS_THROUGH and args.get("x") is not None:
            node = args["x"]
        elif op in ("rms_norm", "layer_norm") and args.get("x") is not None and \
                len(getattr(args["x"].type, "axes", ())) >= 4:
            node = args["x"]  # a per-head norm ([b H n Dh] over Dh)
        elif op in ("mul", "div") and len(node.inputs) == 2 and not isinstance(node.inputs[1].type, TensorT):
            node = node.inputs[0]  # scaled by a number
        else:
            return node, env, None
    return node, env, None


def _weight(plan, lin):
    """(model, field) of a linear's weight when it is a field held as an nn.Linear."""
    if lin.op != "linear":
        return None
    w = lin.attrs.get("args", {}).get("W")
    if w is None or w.op != "field" or not hasattr(w.inputs[0].type, "name"):
        return None
    key = (w.inputs[0].type.name, w.attrs["name"])
    fp = plan.fields.get(key)
    return key if fp is not None and fp.kind == "linear" else None


def _assign(out: ParallelPlan, key, role: Role):
    old = out.roles.get(key)
    if old is not None and old.style != role.style:
        out.unsplit.append((role.node, f"`{key[1]}` is read both as {old.role} and as {role.role}"))
        return
    out.roles.setdefault(key, role)


def _packed(prog, plan, out: ParallelPlan, node, env, part, role: Role) -> bool:
    """Whether node is a split of a linear's output features (a packed param); records
    it, and `role` as the role of its part `part`."""
    if node.op != "split" or part is None:
        return False
    src, _ = _origin(prog, node.attrs["args"]["x"], env)
    key = _weight(plan, src)
    pat = node.attrs.get("pattern")
    items = pat.inputs[0].items if pat is not None else []
    k = getattr(pat, "split_k", 0) or 0
    group = getattr(items[-1], "items", None) or [] if items else []
    # the parts must be blocks of the linear's rows: the group starting with the number
    # of parts is the last axis (the output features); else it isn't a packed param
    if key is None or not group or getattr(group[0], "value", None) != k:
        return False
    p = out.packed_param(key)
    if p is None:
        p = Packed(key[0], key[1], k, node)
        out.packed.append(p)
    if len(group) >= 2 and getattr(group[1], "name", None):  # `(2 F)`: each rank holds a share of F
        a = pat.bind.get(group[1].name)
        if a is not None:
            p.unit = p.unit or a.size
            out.local_sizes.add(a.size)
    old = p.roles.get(part)
    if old is not None and old.style != role.style:
        out.unsplit.append((role.node, f"part {part} of `{key[1]}` is read both as {old.role} and as {role.role}"))
    else:
        p.roles.setdefault(part, role)
    return True


def _function(prog, plan, g, out: ParallelPlan):
    envs = _envs(g)
    for s in _straight(g.body):
        env = (envs[id(s)], {}, envs)
        order, _ = walk_nodes([Ret(s.iter if isinstance(s, Loop) else s.value, 0, "")])
        for n in order:
            if n.op == SDPA:
                _attention(prog, plan, out, n, env)
            elif _weight(plan, n) is not None:
                _reader(prog, plan, out, n, env)


def _attention(prog, plan, out, n, env):
    site = plan.attention.sites.get(id(n))
    q = n.attrs["args"]["q"]
    out.local_sizes.add(q.type.axes[-3].size)
    for arg, role in (("q", "query"), ("k", "key"), ("v", "value")):
        a = n.attrs["args"][arg]
        stored = site.stored.get(arg) if site is not None else None
        src = stored.source if stored is not None and stored.source is not None else a
        size = None
        if len(getattr(src.type, "axes", ())) >= 3:
            size = src.type.axes[-3].size
            out.local_sizes.add(size)  # the keys' and values' own heads
        o, o_env, part = _origin_part(prog, a, env)
        style = COLWISE
        if role != "query" and site is not None and site.kv_heads == 1:
            style = REPLICATE
        heads = None if site is None else site.heads if role == "query" else site.kv_heads
        r = Role(role, style, o, heads, size)
        if _packed(prog, plan, out, o, o_env, part, r):
            continue
        key = _weight(plan, o)
        if key is None:
            out.unsplit.append((n, f"its {role} don't come straight from a linear"))
            continue
        _assign(out, key, r)


def _reader(prog, plan, out, lin, env):
    """A linear reading per-head or per-unit values: the attention's output, an MLP's."""
    x, x_env = _origin(prog, lin.attrs["args"]["x"], env)
    key = _weight(plan, lin)
    if x.op == SDPA:
        _assign(out, key, Role("output", ROWWISE, lin))
        return
    parts = [x] if x.op in ACTIVATIONS else list(x.inputs) if x.op == "mul" and len(x.inputs) == 2 else []
    found = []
    packed = []
    for p in parts:
        p, p_env, part = _origin_part(prog, p, x_env)
        act = p.op in ACTIVATIONS
        if act:
            p, p_env, part = _origin_part(prog, p.attrs["args"]["x"], p_env)
        role = "gate" if act and len(parts) == 2 else "up"
        if p.op == "split" and part is not None:
            packed.append((p, p_env, part, role))
            continue  # its parts are split as colwise linears are
        k = _weight(plan, p)
        if k is None:
            return
        found.append((k, role, p))
    if not found and not packed:
        return
    for p, p_env, part, role in packed:
        if not _packed(prog, plan, out, p, p_env, part, Role(role, COLWISE, p)):
            return
    for k, role, node in found:
        _assign(out, k, Role(role, COLWISE, node))
    _assign(out, key, Role("down", ROWWISE, lin))


def _reads(root) -> set:
    order, _ = walk_nodes([Ret(root, 0, "")])
    return {n.attrs["name"] for n in order if n.op == "local"}


def _body_reads(body) -> set:
    out = set()
    for s in _straight(body):
        out |= _reads(s.iter if isinstance(s, Loop) else s.value)
    return out


def _pipeline(prog, plan, attention_count):
    """(Pipeline, None) when the exported function is embeddings, one loop over the root's
    stack of layers carrying one value, then the rest; else (None, why not)."""
    g = prog.entry
    loops = [i for i, s in enumerate(g.body) if isinstance(s, Loop)]
    if len(loops) != 1:
        return None, f"`{g.name}` has {len(loops)} loops over layers at its top level, not one"
    i = loops[0]
    loop = g.body[i]
    it = loop.iter
    fp = plan.fields.get((plan.root, it.attrs.get("name"))) if it.op == "field" else None
    if fp is None or fp.kind != "stack" or it.inputs[0].op != "local":
        return None, f"the loop at line {loop.line} isn't over a stack of layers of the model"
    stack_t = prog.model(plan.root).fields[it.attrs["name"]].type
    before, after = g.body[:i], g.body[i + 1:]
    bound = {t for s in before if isinstance(s, Bind) for t in s.targets}
    later = _body_reads(loop.body) | _body_reads(after)
    carried = bound & later
    in_loop = {t for s in _straight(loop.body) if isinstance(s, Bind) for t in s.targets}
    if len(carried) != 1 or not carried <= in_loop:
        names = ", ".join(f"`{c}`" for c in sorted(carried)) or "nothing"
        return None, (f"the loop at line {loop.line} carries {names} from before it; pipeline stages "
                      f"pass one value, the hidden states")
    if isinstance(stack_t, StackT) and attention_count is not None:
        # vLLM hands each stage a range of `num_hidden_layers`, the attentions: one per layer
        per_layer = attention_count(stack_t.model)
        if per_layer != 1 or attention_count(plan.root) != prog.value_of(stack_t.count):
            return None, (f"each of the layers of `{it.attrs['name']}` must hold one attention, and no "
                          f"attention be outside them")
    return Pipeline(loop, next(iter(carried)), fp.attr), None
