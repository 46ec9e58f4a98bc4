"""What each model field becomes in PyTorch, and what a language model's parts are.

Decided once from the op graph and shared by the code generator and the weight mapping
(param path -> state_dict key), so the two can never disagree:
- a param read only as `linear`'s weight becomes an `nn.Linear` (with the bias folded in
  when every such read has the same bias field beside it), so engines can swap their
  own layers in; a param read only as `embedding`'s table becomes an `nn.Embedding`;
  any other param stays an `nn.Parameter`;
- a language model (one that passes E3301 to E3305) names its token-id and position
  parameters, its embedding table and its output layer (tied when they are one field),
  and each attention's groups and key/value sources (attention_plan.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..check.codes.e3306_model_first import must_take_the_model_first
from ..check.env import held_models
from ..check.types import ModelT, StackT, TensorT
from .attention_plan import AttentionPlan, plan_attention
from .graph import Bind, CompileError, Loop, Ret
from .names import py_ident

def py_name(name: str) -> str:
    """The Python name of a source name (see names.py)."""
    return py_ident(name)


def attr_name(name: str, taken=()) -> str:
    """The attribute of a field or method: a Python name, none of nn.Module's own."""
    return py_ident(name, taken)


@dataclass
class FieldPlan:
    kind: str  # param | linear | embedding | model | stack
    attr: str  # the Python attribute
    bias: Optional[str] = None  # linear: the source field folded in as its bias
    folded_into: Optional[str] = None  # a bias field: the linear field it belongs to


@dataclass
class LanguageModel:
    ids: str  # token-id parameter
    positions: Optional[str]  # positions parameter, if any
    table: str  # embedding table field of the root model
    output: str  # output layer field of the root model
    tied: bool
    embed_node: object = None  # the `embedding(ids, m.table)` node of the exported function
    out_node: object = None  # the returned `linear(h, m.output)` node
    final_softcap: Optional[float] = None  # v0.3: `softcap(linear(h, m.output), c)`'s c (Gemma 2)


@dataclass
class Plan:
    prog: object
    root: str  # the root model's name
    fields: dict = field(default_factory=dict)  # (model, field) -> FieldPlan
    lm: Optional[LanguageModel] = None
    attention: AttentionPlan = field(default_factory=AttentionPlan)  # language models: groups, kv sources

    def field(self, model: str, name: str) -> FieldPlan:
        return self.fields[(model, name)]


def walk_nodes(body):
    """Every node of a FnGraph body, each once, with (parent, role) for its uses."""
    seen: dict = {}
    uses: dict = {}
    order: list = []

    def visit(root):
        stack = [root]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen[id(n)] = n
            order.append(n)
            roles = {}
            if "args" in n.attrs:
                for k, v in n.attrs["args"].items():
                    if v is not None:
                        roles[id(v)] = k
            for i in n.inputs:
                uses.setdefault(id(i), []).append((n, roles.get(id(i))))
                stack.append(i)

    def stmts(ss):
        for s in ss:
            if isinstance(s, (Bind, Ret)):
                visit(s.value)
                if isinstance(s, Bind):
                    uses.setdefault(id(s.value), []).append((s, "bind"))
                else:
                    uses.setdefault(id(s.value), []).append((s, "return"))
            elif isinstance(s, Loop):
                visit(s.iter)
                stmts(s.body)
    stmts(body)
    return order, uses


def _model_of(node, g) -> Optional[str]:
    t = node.type
    return t.name if isinstance(t, ModelT) else None


def make_plan(prog, language_model: bool) -> Plan:
    entry = prog.entry
    if not entry.params or not isinstance(entry.params[0][1], ModelT):
        raise CompileError(must_take_the_model_first(entry.name))
    root = entry.params[0][1].name
    plan = Plan(prog, root)
    reads: dict = {}  # (model, field) -> [(node, parent, role, fngraph)]
    for g in prog.fns.values():
        order, uses = walk_nodes(g.body)
        for n in order:
            if n.op != "field" or not isinstance(n.type, TensorT):
                continue
            m = _model_of(n.inputs[0], g)
            if m is None:
                continue
            for parent, role in uses.get(id(n), []) or [(None, None)]:
                reads.setdefault((m, n.attrs["name"]), []).append((n, parent, role, g))
    if language_model:
        plan.lm = _language_model(prog, root)
        plan.attention = plan_attention(prog)
    skip = set()
    if plan.lm is not None:
        skip = {id(plan.lm.out_node.attrs["args"]["W"])}
    for mname in _models(prog, root):
        m = prog.model(mname)
        taken: set = set()
        for fname, f in m.fields.items():
            key = (mname, fname)
            attr = attr_name(fname, taken)
            taken.add(attr)
            if isinstance(f.type, ModelT):
                plan.fields[key] = FieldPlan("model", attr)
            elif isinstance(f.type, StackT):
                plan.fields[key] = FieldPlan("stack", attr)
            else:
                rs = [r for r in reads.get(key, []) if id(r[0]) not in skip]
                plan.fields[key] = FieldPlan(_kind(rs, f.type), attr)
    if plan.lm is not None:
        plan.fields[(root, plan.lm.table)].kind = "embedding"
        if not plan.lm.tied:
            plan.fields[(root, plan.lm.output)].kind = "lm_head"
    _fold_biases(plan, reads)
    return plan


def _kind(rs: list, t) -> str:
    if not rs or not isinstance(t, TensorT) or len(t.axes) != 2 or t.dtype.name != "f32":
        return "param"
    roles = {(p.op if p is not None and hasattr(p, "op") else None, role) for _, p, role, _ in rs}
    if roles == {("linear", "W")}:
        return "linear"
    if roles == {("embedding", "E")}:
        return "embedding"
    return "param"


def _fold_biases(plan: Plan, reads: dict):
    """A linear whose every read has the same bias field of the same model: one nn.Linear."""
    for (mname, fname), fp in plan.fields.items():
        if fp.kind != "linear":
            continue
        biases = set()
        for node, parent, _, _ in reads.get((mname, fname), []):
            b = parent.attrs["args"].get("b")
            if b is None or b.op != "field" or _model_of(b.inputs[0], None) != mname or \
                    b.inputs[0].op != "local" or node.inputs[0].op != "local" or \
                    b.inputs[0].attrs["name"] != node.inputs[0].attrs["name"]:
                biases.add(None)
            else:
                biases.add(b.attrs["name"])
        if len(biases) != 1 or None in biases:
            continue
        bname = biases.pop()
        bp = plan.fields.get((mname, bname))
        brs = reads.get((mname, bname), [])
        if bp is None or bp.kind != "param" or not all(p is not None and getattr(p, "op", "") == "linear"
                                                       and role == "b" for _, p, role, _ in brs):
            continue
        t = plan.prog.model(mname).fields[bname].type
        if not isinstance(t, TensorT) or len(t.axes) != 1:
            continue
        fp.bias = bname
        bp.kind = "bias"
        bp.folded_into = fname


def _models(prog, root: str) -> list:
    out = []
    for n, m in held_models([root], prog.model):
        if m is None:
            raise CompileError(f"model `{n}` did not check")
        out.append(n)
    return out


def models_in_order(prog, root: str) -> list:
    """Models reachable from the root, each after the models it contains."""
    order, done = [], set()

    def visit(name):
        if name in done:
            return
        done.add(name)
        m = prog.model(name)
        for f in m.fields.values():
            if isinstance(f.type, ModelT):
                visit(f.type.name)
            elif isinstance(f.type, StackT):
                visit(f.type.model)
        order.append(name)
    visit(root)
    return order


def _language_model(prog, root: str) -> LanguageModel:
    g = prog.entry
    ids = g.params[1][0]
    positions = g.params[2][0] if len(g.params) > 2 and isinstance(g.params[2][1], TensorT) \
        and g.params[2][1].dtype.is_int else None
    last = g.body[-1]
    out_node = last.value if isinstance(last, Ret) else None
    cap = None
    if out_node is not None and out_node.op == "softcap":  # v0.3: the logits capped (Gemma 2)
        cap = out_node.attrs.get("c")
        if not isinstance(cap, (int, float)) or isinstance(cap, bool):
            raise CompileError("a language model's final softcap must be one number known at export", out_node.where)
        out_node = out_node.attrs["args"]["x"]
    if out_node is None or out_node.op != "linear":
        raise CompileError("a language model returns its output layer")
    w = out_node.attrs["args"]["W"]
    order, _ = walk_nodes(g.body)
    embed = next((n for n in order if n.op == "embedding" and n.attrs["args"]["ids"].op == "local"
                  and n.attrs["args"]["ids"].attrs["name"] == ids), None)
    if embed is None or embed.attrs["args"]["E"].op != "field" or w.op != "field":
        raise CompileError("a language model embeds its token ids with a field of the model")
    table = embed.attrs["args"]["E"].attrs["name"]
    output = w.attrs["name"]
    return LanguageModel(ids, positions, table, output, table == output, embed, out_node,
                         float(cap) if cap is not None else None)
