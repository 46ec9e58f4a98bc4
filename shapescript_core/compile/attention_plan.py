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

GGUF stores the keys and values as they come out of their projection, so it needs more:
`AttentionSite.stored` records, for `k` and `v`, the repeat of their heads found anywhere on
their way to the attention (through bindings, whoever else reads them, rope, a per-head
norm and helper functions), the head count before it, and whether it is group-major
(`(G Hkv)`: query head h reads key/value head h % Hkv, where llama.cpp reads h // G). Only
the GGUF matcher reads these fields, so the PyTorch code stays what `groups`, `sources`
and `elided` make it: a group-major repeat is exported to Hugging Face and vLLM as plain
multi-head attention (numerically the same), to GGUF as grouped-query attention with the
query heads re-ordered. The GGUF matcher finds an attention's site by the id of its call's
syntax node (`by_call`), the key the trace keeps (`Trace.attention_runs` uses it too).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..syntax import ast as A
from .graph import Bind, CompileError, Loop, Ret

SDPA = "scaled_dot_product_attention"


@dataclass
class Stored:
    """The keys or values as GGUF stores them (read only by the GGUF matcher)."""
    repeat: object = None       # the `repeat` on their way to the attention, if any
    source: object = None       # the node before that repeat (the attention's argument if none)
    heads: int | None = None    # their head count before the repeat
    groups: int | None = None   # query heads per stored head; None: a repeat of another shape
    group_major: bool = False   # repeated as (G Hkv) rather than (Hkv G)


@dataclass
class AttentionSite:
    node: object      # the scaled_dot_product_attention node
    fn: str           # the function that holds it
    heads: int        # query heads
    groups: int       # query heads per key/value head (the PyTorch code's attention)
    stored: dict = field(default_factory=dict)  # "k", "v" -> Stored (GGUF only)

    @property
    def kv_heads(self) -> int:
        return self.heads // self.groups


@dataclass
class AttentionPlan:
    sites: dict = field(default_factory=dict)    # id(attention node) -> AttentionSite
    sources: dict = field(default_factory=dict)  # id(k or v argument) -> the node before the repeat
    elided: dict = field(default_factory=dict)   # id(Bind) -> the node it keeps instead of its value
    by_call: dict = field(default_factory=dict)  # id(the attention call's syntax node) -> AttentionSite

    def site(self, node) -> AttentionSite:
        return self.sites[id(node)]

    def site_of_call(self, syntax) -> AttentionSite | None:
        """The site of a traced attention, by its call's syntax node (the trace keeps it)."""
        return self.by_call.get(id(syntax))


def plan_attention(prog) -> AttentionPlan:
    """Every attention of every function of the program, its groups and kv sources."""
    plan = AttentionPlan()
    for g in prog.fns.values():
        _function(prog, g, plan)
    return plan


def _function(prog, g, plan: AttentionPlan):
    binds, last = {}, {}
    envs, before = {}, {}  # id(statement) -> its environment for `_stored`; id(Bind) -> names before it
    for s in _straight(g.body):
        envs[id(s)] = (dict(last), before, {})
        if isinstance(s, Bind):
            before[id(s)] = dict(last)
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
            site = AttentionSite(n, g.name, heads, groups,
                                 {role: _stored(prog, n.attrs["args"][role], envs[id(s)])
                                  for role in ("k", "v")})
            plan.sites[id(n)] = site
            if n.ast is not None:
                plan.by_call[id(n.ast)] = site


def _stored(prog, arg, env) -> Stored:
    """The repeat of the keys' or values' heads on their way to the attention, through
    bindings, rope, a per-head norm and helper functions (what GGUF stores)."""
    node, seen = arg, set()
    while id(node) not in seen:
        seen.add(id(node))
        if node.op == "local":
            found = _lookup(env, node.attrs["name"])
            if found is None:
                break
            node, env = found
        elif node.op in ("rope", "rms_norm") and node.attrs.get("args", {}).get("x") is not None:
            node = node.attrs["args"]["x"]
        elif node.op == "call":
            inner = _helper_result(prog, node, env)
            if inner is None:
                break
            node, env = inner
        elif node.op == "repeat":
            return _stored_repeat(prog, node)
        else:
            break
    return Stored(None, arg, _heads(prog, arg), 1)


# An environment for `_stored`: (the bindings in scope: name -> Bind, the bindings before
# each statement: id(Bind) -> {name: Bind}, a helper's parameters: name -> (node, environment))
def _env(body, params: dict, upto=None):
    last: dict = {}
    before: dict = {}
    for s in _straight(body):
        if s is upto:
            break
        if isinstance(s, Bind):
            before[id(s)] = dict(last)
            for t in s.targets:
                last[t] = s
    return last, before, params


def _lookup(env, name: str):
    scope, before, params = env
    bind = scope.get(name)
    if bind is not None:
        if len(bind.targets) != 1:
            return None
        return bind.value, (before[id(bind)], before, params)
    return params.get(name)


def _helper_result(prog, call, env):
    """(the node a helper returns, its environment, its parameters bound to the call's
    arguments) for a helper whose body ends in `return`."""
    callee = prog.fns.get(call.attrs.get("fn"))
    if callee is None or not callee.body or not isinstance(callee.body[-1], Ret):
        return None
    params = {p: (a, env) for p, a in call.attrs.get("args", {}).items() if a is not None}
    return callee.body[-1].value, _env(callee.body, params, upto=callee.body[-1])


def _stored_repeat(prog, rep) -> Stored:
    x = rep.attrs["args"]["x"]
    if _is_head_repeat(rep):
        return Stored(rep, x, _heads(prog, x), _repeat_groups(rep, prog))
    pat = rep.attrs["pattern"]
    left, right = pat.inputs[0].items, pat.output.items
    if (len(left) == len(right) and len(left) >= 3 and isinstance(left[-3], A.PName)
            and isinstance(right[-3], A.PGroup) and len(right[-3].items) == 2
            and all(isinstance(i, A.PName) for i in right[-3].items)
            and right[-3].items[1].name == left[-3].name
            and _same(left[:-3], right[:-3]) and _same(left[-2:], right[-2:])):
        return Stored(rep, x, _heads(prog, x), _named_size(rep, prog, right[-3].items[0].name),
                      group_major=True)
    return Stored(rep, x, _heads(prog, x), None)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(isinstance(l, A.PName) and isinstance(r, A.PName) and l.name == r.name
                                    for l, r in zip(a, b))


def _heads(prog, node) -> int | None:
    axes = getattr(node.type, "axes", None) or []
    return prog.value_of(axes[-3].size) if len(axes) >= 3 else None


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
            return _named_size(rep, prog, it.items[1].name)
    return 1


def _named_size(rep, prog, name: str) -> int:
    """The value of a name the repeat's pattern introduces."""
    a = rep.attrs["pattern"].bind.get(name)
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
