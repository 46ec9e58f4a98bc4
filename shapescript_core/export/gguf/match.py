"""Match an exported function's op graph against llama.cpp's architectures (`archs`).

`match(trace)` returns a `Plan` or a `Departure`. It reads the inlined trace
(`compile.graph.trace`), so names of fields and functions, and how the source is split
into helpers, do not matter; what the nodes compute does.

The walk: the output layer and the final norm at the end; the residual stream back from
there (`x = x + sublayer(norm(x))`, one add per sublayer) to the embedding; then each
sublayer forward, attention and MLP in turn. Q, K and V may come from separate
projections or from one fused projection split by a pattern, in any factor order;
`Gather` steps put the rows in the order llama.cpp reads. Every mismatch becomes a
departure at its node; the one earliest in the graph (the order the model runs) is the
one reported. No numpy and no gguf here: the checker runs this for E3313.
"""
from __future__ import annotations

import math

from .archs import ROPE_STYLE, has
from .plan import Departure, Gather, Plan, RopePermute, TensorPlan

DEFAULT_CONTEXT = 4096  # llama-family sources take positions as a tensor; see docs
UNARY = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",
         "abs", "neg", "square", "sin", "cos", "scale", "to"}


class _Depart(Exception):
    def __init__(self, node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


def _line(node) -> str:
    return f" (line {node.where[1]})" if node is not None and node.where and node.where[1] else ""


class _Proj:
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

    @property
    def W(self):
        return self.lin.attrs["args"]["W"]

    @property
    def b(self):
        return self.lin.attrs["args"].get("b")


class Matcher:
    def __init__(self, tr):
        self.tr = tr
        self.prog = tr.program
        self.index = {id(n): i for i, n in enumerate(tr.nodes)}
        self.found: list = []  # [_Depart] collected along the residual stream
        self.arch = "llama"

    # ------------------------------------------------------------ helpers
    def depart(self, node, place: str, what: str):
        raise _Depart(node, f"{what}{_line(node)}, where {self.arch} has {has(self.arch, place)}")

    def arg(self, n, name):
        return n.attrs.get("args", {}).get(name)

    def param(self, n, role: str):
        if n is None or n.op != "param":
            raise _Depart(n, f"the {role} is computed{_line(n)}, where {self.arch} reads a param")
        return n.attrs["path"]

    def size_of(self, name_or_int, pattern) -> int | None:
        if isinstance(name_or_int, int):
            return name_or_int
        ax = pattern.bind.get(name_or_int)
        if ax is not None:
            return self.prog.value_of(ax.size)
        d = self.prog.env.dim(name_or_int)
        return self.prog.value_of(d) if d is not None else None

    def is_ancestor(self, a, b) -> bool:
        """Is a among the inputs of b, transitively?"""
        lo = self.index[id(a)]
        stack, seen = [b], set()
        while stack:
            n = stack.pop()
            if n is a:
                return True
            for i in n.inputs:
                if id(i) not in seen and self.index.get(id(i), -1) >= lo:
                    seen.add(id(i))
                    stack.append(i)
        return False

    def width(self, n) -> int | None:
        return n.shape[-1] if n.shape else None

    # ------------------------------------------------------------ the whole model
    def run(self) -> Plan:
        tr = self.tr
        out = tr.output
        if out is None or out.op != "linear":
            raise _Depart(out, "the logits don't come from an output layer")
        if self.arg(out, "b") is not None:
            raise _Depart(out, f"the output layer has a bias{_line(out)}")
        w_out = self.param(self.arg(out, "W"), "output layer")
        final = self.arg(out, "x")
        if final.op not in ("rms_norm", "layer_norm"):
            what = "the residual stream directly" if final.op == "add" else f"`{final.op}`"
            raise _Depart(out, f"the output layer reads {what}{_line(out)}, where every "
                               f"llama.cpp architecture has a norm before it")
        self.arch = "gpt2" if final.op == "layer_norm" else "llama"
        stream = self.arg(final, "x")
        subs = []
        while True:
            if stream.op == "add" and len(stream.inputs) == 2:
                a, b = stream.inputs
                if self.is_ancestor(a, b):
                    subs.append((stream, a, b))
                    stream = a
                    continue
                if self.is_ancestor(b, a):
                    subs.append((stream, b, a))
                    stream = b
                    continue
            if stream.op == "add" and not self.embeddings_sum(stream):
                raise _Depart(stream, f"this `+`{_line(stream)} joins sublayers that don't feed one another "
                                      f"(a parallel block), where {self.arch} has {has(self.arch, 'block')}")
            if stream.op in UNARY and stream.inputs:
                self.found.append(_Depart(stream, f"`{stream.op}` on the residual stream{_line(stream)}, "
                                                  f"where {self.arch} {has(self.arch, 'stream')}"))
                stream = stream.inputs[0]
                continue
            break
        subs.reverse()
        embeds = self.embeddings(stream)
        if len(embeds) == 2:
            self.arch = "gpt2"
        plan_t: list = []
        try:
            hp = self.start(embeds, plan_t)
            if len(subs) % 2 or not subs:
                raise _Depart(subs[-1][0] if subs else stream,
                              f"the blocks have {len(subs)} sublayers{_line(subs[-1][0] if subs else stream)}, "
                              f"where {self.arch} has {has(self.arch, 'block')}")
            self.blocks(subs, hp, plan_t)
            self.norm(final, "output_norm", hp, plan_t, None, stream_check=False)
        except _Depart as d:
            self.found.append(d)
        if self.found:
            raise min(self.found, key=lambda d: self.index.get(id(d.node), 1 << 30))
        tied = w_out == embeds[0][1]
        if not tied:
            plan_t.append(TensorPlan("OUTPUT", None, "weight", w_out, tuple(out.inputs[1].shape)))
        plan = Plan(self.arch, self.hparams(hp), plan_t)
        if tied:
            plan.notes.append("output layer tied to the token embedding")
        return plan

    def embeddings_sum(self, n) -> bool:
        return n.op == "add" and all(i.op == "embedding" for i in n.inputs)

    def embeddings(self, n) -> list:
        """[(node, table path)] of the embeddings the stream starts from (token first)."""
        if n.op == "embedding":
            return [(n, self.param(self.arg(n, "E"), "token embedding"))]
        if n.op == "add" and all(i.op == "embedding" for i in n.inputs):
            out = [(i, self.param(self.arg(i, "E"), "embedding table")) for i in n.inputs]
            ids = [o for o in out if self.arg(o[0], "ids") is self.tr.inputs.get(self._ids_name())]
            rest = [o for o in out if o not in ids]
            if len(ids) == 1:
                return ids + rest
        raise _Depart(n, f"the residual stream starts from `{n.op}`{_line(n)}, "
                         f"where {self.arch} has {has(self.arch, 'embedding')}")

    def _ids_name(self):
        for name, n in self.tr.inputs.items():
            if getattr(n.type, "dtype", None) is not None and n.type.dtype.name == "Index":
                return name
        return None

    def start(self, embeds, plan_t) -> dict:
        tok, tok_path = embeds[0]
        V, D = self.arg(tok, "E").shape
        hp = {"vocab_size": V, "embedding_length": D, "eps": None, "theta": None}
        plan_t.append(TensorPlan("TOKEN_EMBD", None, "weight", tok_path, (V, D)))
        if self.arch == "gpt2":
            if len(embeds) != 2:
                self.depart(tok, "embedding", "the residual stream starts from the token embedding alone")
            pos_node, pos_path = embeds[1]
            if self.arg(pos_node, "ids").op != "input":
                raise _Depart(pos_node, f"the position embedding looks up computed indices{_line(pos_node)}, "
                                        f"where gpt2 looks up the positions")
            P = self.arg(pos_node, "E").shape[0]
            hp["context_length"] = P
            plan_t.append(TensorPlan("POS_EMBD", None, "weight", pos_path, tuple(self.arg(pos_node, "E").shape)))
        else:
            hp["context_length"] = DEFAULT_CONTEXT
        return hp

    def hparams(self, hp) -> dict:
        out = {"vocab_size": hp["vocab_size"], "context_length": hp["context_length"],
               "embedding_length": hp["embedding_length"], "block_count": hp["blocks"],
               "feed_forward_length": hp["ffn"], "head_count": hp["heads"],
               "head_count_kv": hp["kv_heads"]}
        if self.arch == "gpt2":
            out["ln_eps"] = hp["eps"]
        else:
            out["rms_eps"] = hp["eps"]
            out["rope_dim"] = hp["head_width"]
            out["freq_base"] = hp["theta"]
        if hp["heads"] * hp["head_width"] != hp["embedding_length"]:
            out["key_length"] = out["value_length"] = hp["head_width"]
        return out

    # ------------------------------------------------------------ blocks
    def blocks(self, subs, hp, plan_t):
        hp["blocks"] = len(subs) // 2
        qwen = False
        per_block = []
        for i in range(0, len(subs), 2):
            (a_add, a_res, a_branch), (m_add, m_res, m_branch) = subs[i], subs[i + 1]
            blk = i // 2
            tensors: list = []
            if not self.has_attention(a_branch, a_res):
                self.depart(a_add, "block", "the block's first sublayer has no attention")
            if self.has_attention(m_branch, m_res):
                self.depart(m_add, "block", "the block's second sublayer has an attention")
            h = self.norm_of(a_branch, a_res)
            self.norm(h, "attn_norm", hp, tensors, blk)
            qwen |= self.attention(a_branch, h, hp, tensors, blk)
            h2 = self.norm_of(m_branch, m_res)
            self.norm(h2, "ffn_norm", hp, tensors, blk)
            self.mlp(m_branch, h2, hp, tensors, blk)
            per_block.append(tensors)
        if qwen and self.arch == "llama":
            self.arch = "qwen2"
        for tensors in per_block:
            for t in tensors:
                plan_t.append(self.finish(t, hp))

    def finish(self, t, hp):
        """Fill in the rope permutation now that the architecture (llama or qwen2) is known."""
        if not isinstance(t, tuple):
            return t
        tp, rope_heads, style = t
        if self.arch == "gpt2" or style == ROPE_STYLE[self.arch]:
            return tp
        return TensorPlan(tp.name, tp.block, tp.suffix, tp.source, tp.shape,
                          tp.steps + (RopePermute(rope_heads, ROPE_STYLE[self.arch]),), tp.kind)

    def has_attention(self, branch, res) -> bool:
        stack, seen = [branch], set()
        while stack:
            n = stack.pop()
            if n.op == "scaled_dot_product_attention":
                return True
            for i in n.inputs:
                if id(i) not in seen and i is not res:
                    seen.add(id(i))
                    stack.append(i)
        return False

    def norm_of(self, branch, res):
        """The norm node of a sublayer: the one user of the stream inside the branch."""
        stack, seen, found = [branch], set(), []
        while stack:
            n = stack.pop()
            if any(i is res for i in n.inputs):
                found.append(n)
            for i in n.inputs:
                if id(i) not in seen and i is not res:
                    seen.add(id(i))
                    stack.append(i)
        found = sorted({id(f): f for f in found}.values(), key=lambda f: self.index[id(f)])
        if len(found) != 1 or found[0].op not in ("rms_norm", "layer_norm"):
            n = found[0] if found else branch
            self.depart(n, "block", f"the sublayer reads the residual stream through `{n.op}`")
        return found[0]

    def norm(self, n, name, hp, tensors, blk, stream_check=True):
        want = "layer_norm" if self.arch == "gpt2" else "rms_norm"
        if n.op != want:
            self.depart(n, "norm", f"the model normalizes with {n.op}")
        eps = n.attrs.get("eps", 1e-5 if want == "layer_norm" else 1e-6)
        if "eps" in n.attrs.get("args", {}) and "eps" not in n.attrs:
            raise _Depart(n, f"the norm's eps is computed{_line(n)}; llama.cpp stores one number")
        if hp["eps"] is None:
            hp["eps"] = float(eps)
        elif not math.isclose(hp["eps"], eps, rel_tol=1e-9):
            raise _Depart(n, f"this norm's eps is {eps}{_line(n)}, where the others' is {hp['eps']}: "
                             f"{self.arch} has one eps")
        D = hp["embedding_length"]
        if [self.prog.value_of(s) for s in n.attrs.get("over", [])] != [D]:
            raise _Depart(n, f"the norm works over {', '.join(n.attrs.get('over_names', []))}{_line(n)}, "
                             f"where {self.arch} normalizes the model width")
        w = self.param(self.arg(n, "w"), "norm weight")
        tensors.append(TensorPlan(name.upper(), blk, "weight", w, (D,), kind="vector"))
        if want == "layer_norm":
            b = self.param(self.arg(n, "b"), "norm bias")
            tensors.append(TensorPlan(name.upper(), blk, "bias", b, (D,), kind="vector"))

    # ------------------------------------------------------------ projections
    def linear(self, n, h, role: str):
        if n.op != "linear":
            self.depart(n, "qk" if role in ("queries", "keys") else "v" if role == "values" else "mlp",
                        f"the {role} come from `{n.op}`")
        if self.arg(n, "x") is not h:
            x = self.arg(n, "x")
            raise _Depart(x, f"the {role}' projection reads `{x.op}`{_line(x)}, where {self.arch} "
                             f"projects the normalized residual stream")
        self.param(self.arg(n, "W"), f"{role}' weight")
        b = self.arg(n, "b")
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

    def proj(self, n, h, role: str, heads: bool) -> _Proj:
        """The projection feeding n: linear, rearrange(linear), getitem(split(linear))."""
        if n.op == "linear":
            if heads:
                self.depart(n, "qk" if role != "values" else "v", f"the {role} are not split into heads")
            lin = self.linear(n, h, role)
            return _Proj(lin, None)
        if n.op == "getitem" and n.inputs and n.inputs[0].op == "split":
            sp = n.inputs[0]
            pat = sp.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            lin = self.linear(sp.inputs[0], h, role)
            group = src[-1] if src and isinstance(src[-1], list) else None
            if group is None:
                raise _Depart(sp, f"the {role} are split along an axis other than the features{_line(sp)}")
            split = [x for x in group if x not in dst]
            if len(split) != 1:
                raise _Depart(sp, f"the split of the {role}{_line(sp)} is not one fused projection")
            return self._head_proj(sp, pat, src, dst, group, lin, role, heads, (split[0], n.attrs["index"]))
        if n.op == "rearrange":
            pat = n.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            lin = self.linear(n.inputs[0], h, role)
            group = src[-1] if src and isinstance(src[-1], list) else None
            if group is None:
                raise _Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{_line(n)}")
            return self._head_proj(n, pat, src, dst, group, lin, role, heads, None)
        self.depart(n, "qk" if role in ("queries", "keys") else "v" if role == "values" else "mlp",
                    f"the {role} go through `{n.op}`")

    def _head_proj(self, n, pat, src, dst, group, lin, role, heads, take):
        if heads:
            if len(dst) < 3 or dst[-2] != src[-2] or isinstance(dst[-3], list) or isinstance(dst[-1], list):
                raise _Depart(n, f"the {role} are not laid out as [… heads tokens width]{_line(n)}")
            target = [dst[-3], dst[-1]]
        else:
            if dst[:-1] != src[:-1] or isinstance(dst[-1], list):
                raise _Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{_line(n)}")
            target = [dst[-1]]
        if any(t not in group for t in target) or len(group) != len(target) + (take is not None):
            raise _Depart(n, f"the {role} are rearranged in a way llama.cpp can't follow{_line(n)}")
        g, sizes = self.group_gather(pat, group, target, take)
        if any(s is None for s in sizes):
            raise _Depart(n, f"the {role}' head sizes have no value{_line(n)}")
        p = _Proj(lin, g if (g.take is not None or g.perm is not None) else None)
        if heads:
            p.heads = self.size_of(target[0], pat)
            p.width = self.size_of(target[1], pat)
            p.names = tuple(target)
        return p

    def head_chain(self, n, h, role: str, want_rope: bool) -> _Proj:
        """sdpa's q/k/v back to its projection: repeat and rope on the way."""
        ropes, repeats = [], []
        while n.op in ("rope", "repeat"):
            (ropes if n.op == "rope" else repeats).append(n)
            n = self.arg(n, "x") or n.inputs[0]
        p = self.proj(n, h, role, heads=True)
        if len(ropes) > 1 or len(repeats) > 1:
            extra = (ropes + repeats)[0]
            raise _Depart(extra, f"the {role} go through `{extra.op}` twice{_line(extra)}")
        if ropes and not want_rope:
            place = "positions" if self.arch == "gpt2" else "v"
            self.depart(ropes[0], place, f"rope is applied to the {role}")
        if want_rope and not ropes:
            self.depart(n, "positions", f"the {role} have no rope")
        if ropes:
            r = ropes[0]
            if self.arg(r, "pos") is None or self.arg(r, "pos").op != "input":
                raise _Depart(r, f"rope takes computed positions{_line(r)}, where {self.arch} "
                                 f"rotates by the token positions")
            if "theta" in r.attrs.get("args", {}) and "theta" not in r.attrs:
                raise _Depart(r, f"rope's theta is computed{_line(r)}; llama.cpp stores one number")
            p.rope = r
        if repeats:
            rp = repeats[0]
            pat = rp.attrs["pattern"]
            src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
            ok = (len(src) == len(dst) and len(src) >= 3 and isinstance(dst[-3], list)
                  and len(dst[-3]) == 2 and src[-3] in dst[-3] and dst[:-3] == src[:-3]
                  and dst[-2:] == src[-2:])
            if not ok:
                g = " ".join(map(str, dst[-3])) if len(dst) >= 3 and isinstance(dst[-3], list) else "another way"
                raise _Depart(rp, f"the {role} are repeated as ({g}){_line(rp)}, where {self.arch} repeats "
                                  f"each key/value head G times in a row: ({src[-3]} G)")
            # (Hkv G): query head h reads key/value head h // G, as llama.cpp does; (G Hkv):
            # h % Hkv, which the export turns into the first by re-ordering the query heads
            p.group_major = dst[-3][1] == src[-3]
            p.groups = self.size_of(dst[-3][0 if p.group_major else 1], pat)
            p.repeat = rp
        return p

    # ------------------------------------------------------------ attention
    def attention(self, branch, h, hp, tensors, blk) -> bool:
        """Adds the block's attention tensors; True when q/k/v have biases (qwen2)."""
        gpt2 = self.arch == "gpt2"
        wo = branch
        if wo.op != "linear":
            raise _Depart(wo, f"the attention's output goes through `{wo.op}`{_line(wo)}, where "
                              f"{self.arch} adds an output projection's result to the residual stream")
        flat = self.arg(wo, "x")
        if flat.op != "rearrange":
            raise _Depart(flat, f"the attention's heads are merged by `{flat.op}`{_line(flat)}")
        pat = flat.attrs["pattern"]
        src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
        att = flat.inputs[0]
        if att.op != "scaled_dot_product_attention":
            raise _Depart(att, f"the attention's output goes through `{att.op}`{_line(att)}, where "
                               f"{self.arch} merges the heads of the attention directly")
        if len(src) < 4 or not isinstance(dst[-1], list) or len(dst[-1]) != 2 or \
                set(dst[-1]) != {src[-3], src[-1]} or dst[:-1] != [src[0], src[-2]][:len(dst) - 1]:
            raise _Depart(flat, f"the attention's heads are merged as ({' '.join(map(str, dst[-1]))}) "
                                f"in a way llama.cpp can't follow{_line(flat)}")
        col_perm = None if dst[-1] == [src[-3], src[-1]] else (1, 0)
        scale = att.attrs.get("scale")
        if "scale" in att.attrs.get("args", {}) and scale is None:
            raise _Depart(att, f"the attention's scale is computed{_line(att)}, where {self.arch} has "
                               f"{has(self.arch, 'scale')}")
        q = self.head_chain(self.arg(att, "q"), h, "queries", want_rope=not gpt2)
        k = self.head_chain(self.arg(att, "k"), h, "keys", want_rope=not gpt2)
        v = self.head_chain(self.arg(att, "v"), h, "values", want_rope=False)
        if scale is not None and not math.isclose(float(scale), 1 / math.sqrt(q.width), rel_tol=1e-6):
            raise _Depart(att, f"the attention's scale is {scale}{_line(att)}, where {self.arch} has "
                               f"{has(self.arch, 'scale')}")
        if q.repeat is not None:
            self.depart(q.repeat, "qk", "the queries are repeated")
        if k.groups != v.groups or k.heads != v.heads or q.heads != k.heads * k.groups:
            raise _Depart(att, f"keys and values have {k.heads}x{k.groups} and {v.heads}x{v.groups} heads "
                               f"for {q.heads} query heads{_line(att)}")
        if not (q.width == k.width == v.width):
            raise _Depart(att, f"queries, keys and values have widths {q.width}, {k.width}, {v.width}{_line(att)}")
        H, Hkv, Dh = q.heads, k.heads, q.width
        if k.group_major != v.group_major:
            raise _Depart(v.repeat, f"keys and values are repeated in different orders{_line(v.repeat)}, where "
                                    f"{self.arch} repeats both the same way")
        # query heads (and the output projection's columns) from (G Hkv) order into (Hkv G)
        regroup = (Gather(0, (k.groups, Hkv, Dh), None, (1, 0, 2)),) if k.group_major else ()
        for key, val, node in (("heads", H, att), ("kv_heads", Hkv, att), ("head_width", Dh, att)):
            if hp.setdefault(key, val) != val:
                raise _Depart(node, f"this attention has {val} where the first has {hp[key]}{_line(node)}: "
                                    f"llama.cpp has one {key.replace('_', ' ')}")
        if q.rope is not None:
            theta = float(q.rope.attrs.get("theta", 10000.0))
            for r in (q.rope, k.rope):
                style = r.attrs.get("style", "half")
                t = float(r.attrs.get("theta", 10000.0))
                if style not in ("half", "interleaved"):
                    raise _Depart(r, f"rope's style is {style}{_line(r)}")
                if t != theta or (hp["theta"] is not None and t != hp["theta"]):
                    raise _Depart(r, f"rope's theta is {t}{_line(r)}, where the others' is "
                                     f"{hp['theta'] or theta}: llama.cpp has one theta")
                if r.attrs.get("style", "half") != q.rope.attrs.get("style", "half"):
                    raise _Depart(r, f"the keys' rope style differs from the queries'{_line(r)}")
            hp["theta"] = theta
            hp.setdefault("rope_style", q.rope.attrs.get("style", "half"))
            if hp["rope_style"] != q.rope.attrs.get("style", "half"):
                raise _Depart(q.rope, f"this rope's style differs from the first's{_line(q.rope)}")
        D = hp["embedding_length"]
        biases = [p.b is not None for p in (q, k, v)]
        if gpt2:
            self.fused_qkv(q, k, v, D, tensors, blk)
        else:
            if wo.attrs["args"].get("b") is not None:
                raise _Depart(wo, f"the attention's output projection has a bias{_line(wo)}, where "
                                  f"{self.arch} has {has(self.arch, 'bias')}")
            style = hp.get("rope_style", "half")
            for p, name, heads in ((q, "ATTN_Q", H), (k, "ATTN_K", Hkv), (v, "ATTN_V", Hkv)):
                rows = ((p.gather,) if p.gather else ()) + (regroup if p is q else ())
                tp = TensorPlan(name, blk, "weight", self.param(p.W, "weight"), tuple(p.W.shape), rows)
                tensors.append((tp, heads, style) if name != "ATTN_V" else tp)
                if any(biases):  # qwen2: zeros where the source has no bias
                    b = (TensorPlan(name, blk, "bias", self.param(p.b, "bias"), tuple(p.b.shape), rows,
                                    kind="vector") if p.b is not None
                         else TensorPlan(name, blk, "bias", None, (heads * Dh,), kind="vector"))
                    tensors.append((b, heads, style) if name != "ATTN_V" else b)
        cols = (Gather(1, (H, Dh) if dst[-1][0] == src[-3] else (Dh, H), None, col_perm),) if col_perm else ()
        cols += tuple(Gather(1, g.shape, None, g.perm) for g in regroup)
        tensors.append(TensorPlan("ATTN_OUT", blk, "weight", self.param(self.arg(wo, "W"), "weight"),
                                  (D, H * Dh), cols))
        if gpt2:
            self.bias(wo, "ATTN_OUT", (D,), tensors, blk)
        return any(biases)

    def fused_qkv(self, q, k, v, D, tensors, blk):
        """gpt2's one attn_qkv: rows [q; k; v], each head-major, from one fused projection
        (re-ordered when its pattern laid the rows out another way) or from separate ones."""
        if q.groups != 1:
            raise _Depart(k.repeat, f"keys and values are repeated{_line(k.repeat)}: gpt2 has as many "
                                    f"key/value heads as query heads")
        rows = 3 * q.heads * q.width
        fused = q.lin is k.lin is v.lin and [p.gather.take[1] for p in (q, k, v)] == [0, 1, 2]
        if fused:
            g = q.gather
            pos, sub = g.take[0], g.perm or (0, 1)
            rest = [i for i in range(3) if i != pos]
            perm = (pos, rest[sub[0]], rest[sub[1]])
            steps = (Gather(0, g.shape, None, perm),) if perm != (0, 1, 2) else ()
            tensors.append(TensorPlan("ATTN_QKV", blk, "weight", self.param(q.W, "weight"), (rows, D), steps))
            b = self.param(q.b, "bias") if q.b is not None else None
            tensors.append(TensorPlan("ATTN_QKV", blk, "bias", b, (rows,), steps, kind="vector"))
            return
        parts, bias_parts = [], []
        for p in (q, k, v):
            steps = (p.gather,) if p.gather else ()
            parts.append((self.param(p.W, "weight"), tuple(p.W.shape), steps))
            bias_parts.append((self.param(p.b, "bias"), tuple(p.b.shape), steps) if p.b is not None
                              else (None, (p.heads * p.width,), ()))
        tensors.append(TensorPlan("ATTN_QKV", blk, "weight", None, (rows, D), parts=tuple(parts)))
        tensors.append(TensorPlan("ATTN_QKV", blk, "bias", None, (rows,), kind="vector", parts=tuple(bias_parts)))

    def bias(self, lin, name, shape, tensors, blk):
        b = lin.attrs["args"].get("b")
        path = self.param(b, "bias") if b is not None else None
        tensors.append(TensorPlan(name, blk, "bias", path, shape, kind="vector"))

    # ------------------------------------------------------------ MLP
    def mlp(self, branch, h, hp, tensors, blk):
        down = branch
        if down.op != "linear":
            self.depart(down, "mlp", f"the MLP ends in `{down.op}`")
        act = self.arg(down, "x")
        D = hp["embedding_length"]
        if self.arch == "gpt2":
            if act.op != "gelu_tanh":
                what = "gelu (exact, erf)" if act.op == "gelu" else act.op
                self.depart(act, "mlp", f"the MLP's activation is {what}")
            up = self.proj(act.inputs[0], h, "MLP's inputs", heads=False)
            F = self.width(act)
            self._ffn(hp, F, act)
            rows = (up.gather,) if up.gather else ()
            tensors.append(TensorPlan("FFN_UP", blk, "weight", self.param(up.W, "weight"), tuple(up.W.shape),
                                      rows))
            tensors.append(TensorPlan("FFN_UP", blk, "bias", self.param(up.b, "bias"), tuple(up.b.shape), rows,
                                      kind="vector") if up.b is not None
                           else TensorPlan("FFN_UP", blk, "bias", None, (F,), kind="vector"))
            tensors.append(TensorPlan("FFN_DOWN", blk, "weight", self.param(down.attrs["args"]["W"], "weight"),
                                      (D, F)))
            self.bias(down, "FFN_DOWN", (D,), tensors, blk)
            return
        if act.op != "mul":
            what = f"{act.op} with no gate" if act.op in UNARY else f"`{act.op}`"
            self.depart(act, "mlp", f"the MLP's activation is {what}")
        a, b = act.inputs
        gate_act, up_n = (a, b) if a.op == "silu" else (b, a) if b.op == "silu" else (None, None)
        if gate_act is None:
            other = a if a.op != "linear" else b
            self.depart(other, "mlp", f"the MLP's gate uses `{other.op}`")
        gate = self.proj(gate_act.inputs[0], h, "MLP's gate", heads=False)
        up = self.proj(up_n, h, "MLP's up projection", heads=False)
        for p in (gate, up, ):
            if p.b is not None:
                raise _Depart(p.lin, f"the MLP's projections have biases{_line(p.lin)}, where {self.arch} "
                                     f"has {has(self.arch, 'bias')}")
        if down.attrs["args"].get("b") is not None:
            raise _Depart(down, f"the MLP's down projection has a bias{_line(down)}, where {self.arch} "
                                f"has {has(self.arch, 'bias')}")
        F = self.width(gate_act)
        self._ffn(hp, F, act)
        for p, name in ((gate, "FFN_GATE"), (up, "FFN_UP")):
            tensors.append(TensorPlan(name, blk, "weight", self.param(p.W, "weight"), tuple(p.W.shape),
                                      (p.gather,) if p.gather else ()))
        tensors.append(TensorPlan("FFN_DOWN", blk, "weight", self.param(down.attrs["args"]["W"], "weight"),
                                  (D, F)))

    def _ffn(self, hp, F, node):
        if hp.setdefault("ffn", F) != F:
            raise _Depart(node, f"this MLP is {F} wide{_line(node)}, where the first is {hp['ffn']}: "
                                f"llama.cpp has one feed-forward length")


def match(tr):
    """A Plan for the trace, or the Departure E3313 reports."""
    m = Matcher(tr)
    try:
        return m.run()
    except _Depart as d:
        return Departure(m.arch, d.reason, d.node)


def node_span(prog, node):
    """(item, pos) of a trace node in the source, or None."""
    ast = getattr(node, "ast", None)
    if ast is None or not getattr(node, "where", None):
        return None
    path, line = node.where
    for g in prog.fns.values():
        it = g.item
        if it.path != path:
            continue
        text_end = it.offset + len(it.text)
        f = prog.ws.file(path)
        if f is None:
            continue
        first = f.lines.line_of(it.offset) + 1
        last = f.lines.line_of(text_end) + 1
        if first <= line <= last:
            return it, ast.pos
    return None
