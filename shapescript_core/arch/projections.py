"""How the matcher reads a projection: linear(h, W, b?) (or h @ W, W [in out]) behind a
head split or a fused split, the repeat and rope on the way to the attention, and the row `Gather` that puts
W's rows in the order llama.cpp reads them (head first, then head width).
"""
from __future__ import annotations

from .departure import Depart, line_of
from .plan import Gather, Transpose

# elementwise builtins: on the residual stream, or where an MLP's gate belongs
UNARY = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",
         "abs", "neg", "square", "sin", "cos", "scale", "to"}


class Proj:
    """A projection read as rows of a param: linear(h, W, b?) with a row Gather."""

    def __init__(self, lin, gather, heads=None, width=None, names=None):
        self.lin = lin
        self.gather = gather
        self.heads = heads      # head count for a head-split projection
        self.width = width      # head width
        self.names = names      # (head name, width name) as the pattern wrote them
        self.rope = None        # the rope node, once seen
        self.groups = 1         # how many query heads each of its heads serves (repeat)
        self.repeat = None
        self.group_major = False  # repeated as (G Hkv) rather than (Hkv G)
        self.norm = None        # qwen3's per-head rms_norm over the head width, once seen

    @property
    def W(self):
        return parts_of(self.lin)[1]

    @property
    def b(self):
        return parts_of(self.lin)[2]

    @property
    def steps(self) -> tuple:
        """Transpose (for `x @ W`) and the row Gather, as the plan's steps."""
        return (((Transpose(),) if self.lin.op != "linear" else ())
                + ((self.gather,) if self.gather is not None else ()))


def parts_of(n):
    """(x, W, b or None) of a projection: linear(x, W, b?), x @ W with W a [in out] param,
    or x @ W + b with b a [out] param; None for anything else."""
    if n.op == "linear":
        args = n.attrs["args"]
        return args["x"], args["W"], args.get("b")
    if n.op == "matmul" and len(n.inputs) == 2:
        W = n.inputs[1]
        if W.op == "param" and len(W.shape) == 2:
            return n.inputs[0], W, None
    if n.op == "add" and len(n.inputs) == 2:
        for m, b in (n.inputs, n.inputs[::-1]):
            inner = parts_of(m) if m.op == "matmul" else None
            if inner is not None and b.op == "param" and tuple(b.shape) == (inner[1].shape[1],):
                return inner[0], inner[1], b
    return None


def weight_of(n):
    return parts_of(n)[1]


def input_of(n):
    return parts_of(n)[0]


def is_projection(n) -> bool:
    return parts_of(n) is not None


class Projections:
    """Matcher methods for projections (mixed into `match.Matcher`)."""

    def linear(self, n, h, role: str):
        if not is_projection(n):
            self.depart(n, "qk" if role in ("queries", "keys") else "v" if role == "values" else "mlp",
                        f"the {role} come from `{n.op}`")
        x = input_of(n)
        if x is not h:
            raise Depart(x, f"the {role}' projection reads `{x.op}`{line_of(x)}, where {self.arch} "
                            f"projects the normalized residual stream")
        self.param(weight_of(n), f"{role}' weight")
        b = parts_of(n)[2]
        if b is not None:
            self.param(b, f"{role}' bias")
        return n

    def group_gather(self, pattern, group, target, take_name=None) -> tuple[Gather, list]:
        """Row Gather for a grouped axis `group` (names/ints) into the `target` names' order."""
        sizes = [self.size_of(x, pattern) for x in group]
        take = None
        rest = list(range(len(group)))
        if take_name is not None:
            pos = group.index(take_name[0])
            take = (pos, take_name[1])
            rest.remove(pos)
        names = [group[i] for i in rest]
        perm = tuple(names.index(t) for t in target)
        return Gather(0, tuple(sizes), take, None if perm == tuple(range(len(perm))) else perm), sizes

    def proj(self, n, h, role: str, heads: bool) -> Proj:
        """The projection feeding n: linear, rearrange(linear), getitem(split(linear))."""
        if is_projection(n):
            if heads:
                self.depart(n, "qk" if role != "values" else "v", f"the {role} are not split into heads")
            lin = self.linear(n, h, role)
            return Proj(lin, None)
        if n.op == "getitem" and n.inputs and n.inputs[0].op == "split":
            sp = n.inputs[0]
            pat = sp.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            lin = self.linear(sp.inputs[0], h, role)
            group = src[-1] if src and isinstance(src[-1], list) else None
            if group is None:
                raise Depart(sp, f"the {role} are split along an axis other than the features{line_of(sp)}")
            split = [x for x in group if x not in dst]
            if len(split) != 1:
                raise Depart(sp, f"the split of the {role}{line_of(sp)} is not one fused projection")
            return self._head_proj(sp, pat, src, dst, group, lin, role, heads, (split[0], n.attrs["index"]))
        if n.op == "rearrange":
            pat = n.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            lin = self.linear(n.inputs[0], h, role)
            group = src[-1] if src and isinstance(src[-1], list) else None
            if group is None:
                raise Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{line_of(n)}")
            return self._head_proj(n, pat, src, dst, group, lin, role, heads, None)
        self.depart(n, "qk" if role in ("queries", "keys") else "v" if role == "values" else "mlp",
                    f"the {role} go through `{n.op}`")

    def _head_proj(self, n, pat, src, dst, group, lin, role, heads, take):
        if heads:
            if len(dst) < 3 or dst[-2] != src[-2] or isinstance(dst[-3], list) or isinstance(dst[-1], list):
                raise Depart(n, f"the {role} are not laid out as [… heads tokens width]{line_of(n)}")
            target = [dst[-3], dst[-1]]
        else:
            if dst[:-1] != src[:-1] or isinstance(dst[-1], list):
                raise Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{line_of(n)}")
            target = [dst[-1]]
        if any(t not in group for t in target) or len(group) != len(target) + (take is not None):
            raise Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{line_of(n)}")
        g, sizes = self.group_gather(pat, group, target, take)
        if any(s is None for s in sizes):
            raise Depart(n, f"the {role}' head sizes have no value{line_of(n)}")
        p = Proj(lin, g if (g.take is not None or g.perm is not None) else None)
        if heads:
            p.heads = self.size_of(target[0], pat)
            p.width = self.size_of(target[1], pat)
            p.names = tuple(target)
        return p

    def head_chain(self, n, h, role: str, want_rope: bool, stored=None) -> Proj:
        """sdpa's q/k/v back to its projection, over the rope, per-head norm and repeat on the
        way. The keys' and values' groups come from the compiler's attention plan (`stored`:
        its `Stored` for them), not from this walk."""
        ropes, repeats, norms = [], [], []
        while n.op in ("rope", "repeat", "rms_norm"):
            {"rope": ropes, "repeat": repeats, "rms_norm": norms}[n.op].append(n)
            n = self.arg(n, "x") or n.inputs[0]
        p = self.proj(n, h, role, heads=True)
        if len(ropes) > 1 or len(repeats) > 1 or len(norms) > 1:
            extra = (ropes + repeats)[0] if len(ropes) > 1 or len(repeats) > 1 else norms[0]
            raise Depart(extra, f"the {role} go through `{extra.op}` twice{line_of(extra)}")
        if norms:
            self.head_norm(norms[0], p, role, ropes)
        if ropes and not want_rope:
            place = "positions" if self.arch == "gpt2" else "v"
            self.depart(ropes[0], place, f"rope is applied to the {role}")
        if want_rope and not ropes:
            self.depart(n, "positions", f"the {role} have no rope")
        if ropes:
            r = ropes[0]
            if self.arg(r, "pos") is None or self.arg(r, "pos").op != "input":
                raise Depart(r, f"rope takes computed positions{line_of(r)}, where {self.arch} "
                                 f"rotates by the token positions")
            if "theta" in r.attrs.get("args", {}) and "theta" not in r.attrs:
                raise Depart(r, f"rope's theta is computed{line_of(r)}; llama.cpp stores one number")
            p.rope = r
        if repeats:
            p.repeat = repeats[0]
        if stored is not None:
            self.stored_groups(p, stored, role)
        return p

    def stored_groups(self, p: Proj, stored, role: str):
        """The keys' or values' groups as the attention plan decided them."""
        rp = p.repeat
        if (rp is None) != (stored.repeat is None) or (rp is not None and rp.ast is not stored.repeat.ast):
            at = rp if rp is not None else stored.repeat
            raise Depart(at, f"the {role} are repeated in a way llama.cpp can't follow{line_of(at)}")
        if rp is not None and stored.groups is None:
            pat = rp.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            g = " ".join(map(str, dst[-3])) if len(dst) >= 3 and isinstance(dst[-3], list) else "another way"
            raise Depart(rp, f"the {role} are repeated as ({g}){line_of(rp)}, where {self.arch} repeats "
                              f"each key/value head G times in a row: ({src[-3]} G)")
        # (Hkv G): query head h reads key/value head h // G, as llama.cpp does; (G Hkv):
        # h % Hkv, which the export turns into the first by re-ordering the query heads
        p.groups, p.group_major = stored.groups, stored.group_major
        if stored.heads is not None and stored.heads != p.heads:
            raise Depart(rp or p.lin, f"the {role} have {stored.heads} heads before their repeat but "
                                      f"{p.heads} out of their projection{line_of(rp or p.lin)}")

    def head_norm(self, nrm, p: Proj, role: str, ropes):
        """qwen3's (and gemma3's) rms_norm of each query/key head over its width, before rope."""
        if role not in ("queries", "keys"):
            self.depart(nrm, "v", f"the {role} are normalized")
        over = [self.prog.value_of(s) for s in nrm.attrs.get("over", [])]
        if over != [p.width]:
            raise Depart(nrm, f"the {role}' norm works over {', '.join(nrm.attrs.get('over_names', []))}"
                              f"{line_of(nrm)}, where {'gemma3' if self.arch == 'gemma3' else 'qwen3'} normalizes "
                              f"each head's width")
        if ropes and self.index[id(ropes[0])] < self.index[id(nrm)]:
            raise Depart(nrm, f"the {role} are normalized after rope{line_of(nrm)}, where "
                              f"{'gemma3' if self.arch == 'gemma3' else 'qwen3'} normalizes them before")
        self.norm_weight(nrm, f"{role}' norm weight")
        p.norm = nrm
