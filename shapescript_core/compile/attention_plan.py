"""Attention groups and key/value sources: decided once, read by every target.

At each attention (`scaled_dot_product_attention`) of a language model, the keys and
values may reach it repeated to the query heads (`repeat(b Hkv n Dh -> b (Hkv G) n Dh)`),
written in place, in a binding of their own (`k = k |> repeat(...)`), or in a helper
function that does only that (`fn widen(t: [b Hkv n Dh]) -> [b H n Dh]`). The cache and
the engines' attention hold them at their own head count, so the plan records for each
attention how many query heads share a key/value head (`groups`) and, for `k` and `v`,
the node holding them before the repeat (`source`); a binding that only feeds the
attention is kept as that node (`elided`). The PyTorch generator (its `CausalAttention`
and vLLM's `PagedAttention`), the Hugging Face config (`num_key_value_heads`) and the
GGUF matcher's `head_count_kv` agree because they read this.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..syntax import ast as A
from .graph import Bind, CompileError, Loop, Ret

SDPA = "scaled_dot_product_attention"


@dataclass
class AttentionSite:
    node: object      # the scaled_dot_product_attention node
    fn: str           # the function that holds it
    heads: int        # query heads
    groups: int       # query heads per key/value head

    @property
    def kv_heads(self) -> int:
        return self.heads // self.groups


@dataclass
class AttentionPlan:
    sites: dict = field(default_factory=dict)    # id(attention node) -> AttentionSite
    sources: dict = field(default_factory=dict)  # id(k or v argument) -> the node before the repeat
    elided: dict = field(default_factory=dict)   # id(Bind) -> the node it keeps instead of its value

    def site(self, node) -> AttentionSite:
        return self.sites[id(node)]


def plan_attention(prog) -> AttentionPlan:
    """Every attention of every function of the program, its groups and kv sources."""
    plan = AttentionPlan()
    for g in prog.fns.values():
        _function(prog, g, plan)
    return plan


def _function(prog, g, plan: AttentionPlan):
    binds, last = {}, {}
    for s in _straight(g.body):
        if isinstance(s, Bind):
            for t in s.targets:
                last[t] = s
        binds[id(s)] = dict(last)
    for s in _straight(g.body):
        if isinstance(s, Loop):
            continue
        for n in _nodes(s.value):
            if n.op != SDPA:
                continue
            q, k = n.attrs["args"]["q"], n.attrs["args"]["k"]
            heads = prog.value_of(q.type.axes[-3].size)
            groups = None
            for role in ("k", "v"):
                arg = n.attrs["args"][role]
                bind = None
                value = arg
                if arg.op == "local":
                    bind = binds[id(s)].get(arg.attrs["name"])
                    if bind is None or len(bind.targets) != 1:
                        continue
                    value = bind.value
                found = _before_repeat(prog, value)
                if found is None:
                    continue
                inner, g_count = found
                if bind is not None:
                    if not _only_attention_reads(g, bind):
                        continue
                    plan.elided[id(bind)] = inner
                    plan.sources[id(arg)] = arg  # the binding now holds the keys/values themselves
                else:
                    plan.sources[id(arg)] = inner
                if role == "k":
                    groups = g_count
            if groups is None:
                groups = heads // prog.value_of(k.type.axes[-3].size)
            plan.sites[id(n)] = AttentionSite(n, g.name, heads, groups)


def _before_repeat(prog, node):
    """(the keys/values before a head repeat, groups) when `node` is one: a `repeat` to the
    query heads, or a call of a function whose body is only that repeat of its parameter."""
    if node.op == "repeat" and _is_head_repeat(node):
        return node.attrs["args"]["x"], _repeat_groups(node, prog)
    if node.op == "call":
        callee = prog.fns.get(node.attrs["fn"])
        if callee is None or len(callee.body) != 1 or not isinstance(callee.body[0], Ret):
            return None
        rep = callee.body[0].value
        if rep.op != "repeat" or not _is_head_repeat(rep):
            return None
        x = rep.attrs["args"]["x"]
        if x.op != "local":
            return None
        arg = node.attrs["args"].get(x.attrs["name"])
        if arg is None:
            return None
        return arg, _repeat_groups(rep, prog)
    return None


def _only_attention_reads(g, bind: Bind) -> bool:
    """Whether the binding's name is read only as an attention's keys or values (until it
    is bound again)."""
    name = bind.targets[0]
    seen = False
    for s in _straight(g.body):
        if s is bind:
            seen = True
            continue
        if not seen:
            continue
        if not isinstance(s, Loop):
            for n, parent, role in _uses(s.value):
                if n.op == "local" and n.attrs["name"] == name and not (
                        parent is not None and parent.op == SDPA and role in ("k", "v")):
                    return False
        else:
            for n, parent, role in _uses(s.iter):
                if n.op == "local" and n.attrs["name"] == name:
                    return False
        if isinstance(s, Bind) and name in s.targets:
            break
    return True


def _nodes(root) -> list:
    out, seen, stack = [], set(), [root]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        stack.extend(n.inputs)
    return out


def _uses(root):
    """(node, parent, role) of every node under root (the root with no parent)."""
    out, stack = [], [(root, None, None)]
    while stack:
        n, parent, role = stack.pop()
        out.append((n, parent, role))
        roles = {id(v): k for k, v in n.attrs.get("args", {}).items() if v is not None}
        stack.extend((i, n, roles.get(id(i))) for i in n.inputs)
    return out


def _straight(body):
    """The statements of a body in order, `for` bodies included after their header."""
    for s in body:
        yield s
        if isinstance(s, Loop):
            yield from _straight(s.body)


def _is_head_repeat(rep) -> bool:
    """`b Hkv n Dh -> b (Hkv G) n Dh`: one axis grouped with one new name after it."""
    pat = rep.attrs["pattern"]
    left = pat.inputs[0].items
    right = pat.output.items
    if len(left) != len(right) or len(left) < 3:
        return False
    changed = [i for i, (l, r) in enumerate(zip(left, right)) if not (
        isinstance(l, A.PName) and isinstance(r, A.PName) and l.name == r.name)]
    if len(changed) != 1:
        return False
    i = changed[0]
    l, r = left[i], right[i]
    return (i == len(left) - 3 and isinstance(l, A.PName) and isinstance(r, A.PGroup) and len(r.items) == 2
            and isinstance(r.items[0], A.PName) and r.items[0].name == l.name)


def _repeat_groups(rep, prog) -> int:
    pat = rep.attrs["pattern"]
    for it in pat.output.items:
        if isinstance(it, A.PGroup):
            name = it.items[1].name
            a = pat.bind.get(name)
            s = a.size if a is not None else rep.attrs.get("_env_dim")
            if s is None:
                for g in prog.fns.values():
                    d = g.env.dim(name)
                    if d is not None:
                        s = d
                        break
            v = prog.value_of(s) if s is not None else None
            if v is None:
                raise CompileError(f"`{name}` has no value", rep.where)
            return v
    return 1
