"""Match an exported function's op graph against llama.cpp's architectures (`archs`).

`match(trace)` returns a `GGUFPlan` or a `Departure`. It reads the inlined trace
(`compile.graph.trace`), so names of fields and functions, and how the source is split
into helpers, do not matter; what the nodes compute does.

The walk: the output layer and the final norm at the end; the residual stream back from
there (`x = x + sublayer(norm(x))`, or gemma3's `x + norm(sublayer(norm(x)))`, one add per
sublayer) to the embedding (gemma3's times sqrt(D)); then each sublayer forward, attention
and MLP in turn. Norm weights used as `c + w` are stored as c + w (`Offset`); gemma3's
layers may differ by rope theta and window, which `windows` checks against what llama.cpp
can say (one window, one theta per kind of layer). Q, K and V may come from separate
projections or from one fused projection split by a pattern, in any factor order;
`Gather` steps put the rows in the order llama.cpp reads. Every mismatch becomes a
departure at its node; the one earliest in the graph (the order the model runs) is the
one reported. The projections (`projections`) and the sublayers (`sublayers`) are read
by the ArchMatcher's mixins. No numpy and no gguf here: the checker runs this for E3313.
"""
from __future__ import annotations

import math

from ..compile.graph import fold
from .archs import FAMILIES, has
from .departure import Depart, line_of
from .experts import Experts, is_mixture
from .plan import Departure, GGUFPlan, Offset, RopePermute, TensorPlan
from .projections import UNARY, Projections
from .sublayers import Sublayers

DEFAULT_CONTEXT = 4096  # llama-family sources take positions as a tensor; see docs
# gemma2's softcap where the source has none: tanh(x / c) * c is x in float32 for any logit;
# a cap at least this large (1e30 as float32 is a little larger) means none
NO_CAP = 1e30


class ArchMatcher(Projections, Sublayers, Experts):
    def __init__(self, tr, importing: bool = False):
        self.tr = tr
        # the importer's roles: a window (and v0.3's rope scaling, rotary_dims, softcaps, a
        # mixture's routing) is no departure in any architecture: recorded, compared with the
        # checkpoint's (E3316)
        self.importing = importing
        self.prog = tr.program
        self.index = {id(n): i for i, n in enumerate(tr.nodes)}
        self.found: list = []  # [_Depart] collected along the residual stream
        self.arch = "llama"
        self.attention_plan = None  # the compiler's AttentionPlan, made at the first attention
        # gemma2/3: (rope theta, window or None, attention node, no per-head norms) per block
        self.layer_attn: list = []
        # v0.3's softcaps: (value, node) of each attention's `softcap=` and of the final one
        self.attn_caps: list = []
        self.final_cap = None
        self.notes: list = []  # what the export's summary says about the match ("exact gelu")
        self.first_mixture = None  # v0.3: the first block's mixture of experts (its `sum`), if any

    # ------------------------------------------------------------ helpers
    def depart(self, node, place: str, what: str):
        raise Depart(node, f"{what}{line_of(node)}, where {self.arch} has {has(self.arch, place)}")

    def arg(self, n, name):
        return n.attrs.get("args", {}).get(name)

    def param(self, n, role: str):
        if n is None or n.op != "param":
            raise Depart(n, f"the {role} is computed{line_of(n)}, where {self.arch} reads a param")
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

    def number(self, n):
        """A compile-time number (a literal, a dim, arithmetic of them), or None."""
        v = fold(n, self.prog) if n is not None else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def norm_weight(self, n, role: str) -> tuple:
        """(param path, steps) of a norm's weight: a param, or `c + w` with c a number,
        stored as c + w (`Offset`): llama.cpp multiplies by the stored weight."""
        w = self.arg(n, "w")
        if w is not None and w.op == "add" and len(w.inputs) == 2:
            for c, p in (w.inputs, w.inputs[::-1]):
                v = self.number(c)
                if p.op == "param" and v is not None:
                    return p.attrs["path"], ((Offset(v),) if v else ())
        return self.param(w, role), ()

    def scaled_embedding(self, n):
        """(the embedding, its factor, the scaling node) for `embedding(...) * c` or
        `scale(embedding(...), c)` with c a number; None for anything else."""
        if n.op == "scale" and len(n.inputs) == 2 and n.inputs[0].op == "embedding":
            v = self.number(n.inputs[1])
            return (n.inputs[0], v, n) if v is not None else None
        if n.op == "mul" and len(n.inputs) == 2:
            for e, c in (n.inputs, n.inputs[::-1]):
                v = self.number(c)
                if e.op == "embedding" and v is not None:
                    return e, v, n
        return None

    # ------------------------------------------------------------ the whole model
    def run(self) -> GGUFPlan:
        tr = self.tr
        out = tr.output
        if out is not None and out.op == "softcap":  # v0.3: the logits capped (Gemma 2)
            self.final_cap = (out.attrs.get("c"), out)
            out = self.arg(out, "x")
        if out is None or out.op != "linear":
            raise Depart(out, "the logits don't come from an output layer")
        w_out = self.param(self.arg(out, "W"), "output layer")
        final = self.arg(out, "x")
        if final.op not in ("rms_norm", "layer_norm"):
            what = "the residual stream directly" if final.op == "add" else f"`{final.op}`"
            raise Depart(out, f"the output layer reads {what}{line_of(out)}, where every "
                               f"llama.cpp architecture has a norm before it")
        self.arch = "gpt2" if final.op == "layer_norm" else "llama"
        stream = self.arg(final, "x")
        subs = []
        while True:
            par = self.parallel(stream)
            if par is not None:  # phi2's x + attn(h) + mlp(h)
                subs.append(par)
                stream = par[1]
                continue
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
            if self.scaled_embedding(stream) is not None:
                break
            if stream.op == "add" and not self.embeddings_sum(stream):
                raise Depart(stream, f"this `+`{line_of(stream)} joins sublayers that don't feed one another "
                                      f"(a parallel block), where {self.arch} has {has(self.arch, 'block')}")
            if stream.op in UNARY and stream.inputs:
                self.found.append(Depart(stream, f"`{stream.op}` on the residual stream{line_of(stream)}, "
                                                  f"where {self.arch} {has(self.arch, 'stream')}"))
                stream = stream.inputs[0]
                continue
            break
        subs.reverse()
        if self.arch == "llama" and any(len(sub) == 3 and sub[2].op == "rms_norm" for sub in subs):
            self.arch = "gemma3"  # a norm after the sublayers
        scaled = self.scaled_embedding(stream)
        if scaled is not None:
            stream = scaled[0]
        embeds = self.embeddings(stream)
        if len(embeds) == 2:
            self.arch = "gpt2"
        elif self.arch == "gpt2":  # layer norms, no position embeddings: rope's families
            par = [sub for sub in subs if len(sub) == 4]
            self.arch = "phi2" if par and self.reads_one_norm(par[0]) else "gptneox"
        plan_t: list = []
        try:
            hp = self.start(embeds, plan_t)
            self.embedding_scale(embeds[0][0], scaled, hp)
            self.blocks(self.grouped(subs, stream), hp, plan_t)
            if FAMILIES[self.arch].sliding_window:
                hp["windows"] = self.windows()
            self.norm(final, "output_norm", hp, plan_t, None, stream_check=False)
            self.output_of_gemma2(w_out == embeds[0][1], out, hp)
            self.output_bias(out, hp, plan_t)
            self.softcaps(hp)
        except Depart as d:
            self.found.append(d)
        if self.found:
            raise min(self.found, key=lambda d: self.index.get(id(d.node), 1 << 30))
        tied = w_out == embeds[0][1] and not FAMILIES[self.arch].own_output  # phi2, gptneox: one of its own
        if not tied:
            plan_t.append(TensorPlan("output", None, "weight", w_out, tuple(out.inputs[1].shape)))
        if hp.get("rope_freqs"):  # llama3's divisors, one per rotated pair (rope_gguf.py)
            plan_t.append(TensorPlan("rope_freqs", None, "weight", None, (len(hp["rope_freqs"]),), kind="vector",
                                     values=hp["rope_freqs"]))
        plan = GGUFPlan(self.arch, self.hparams(hp), plan_t, rope=hp.get("rope", ("none", (), None)),
                        routing=hp.get("routing"))
        if tied:
            plan.notes.append("output layer tied to the token embedding")
        if "exact gelu" in self.notes:
            plan.notes.append(f"llama.cpp's {self.arch} computes the MLP's gelu as every GELU it runs, with the tanh "
                              f"approximation from a float16 table: its logits differ from the source's by about "
                              f"1e-3 (docs/serving-engines.md)")
        return plan

    def output_bias(self, out, hp, plan_t):
        """phi2's output layer has a bias (zeros where the source has none); no other
        architecture's has one."""
        b = self.arg(out, "b")
        if not FAMILIES[self.arch].output_bias:
            if b is not None:
                raise Depart(out, f"the output layer has a bias{line_of(out)}, where {self.arch} has none")
            return
        path = self.param(b, "output layer's bias") if b is not None else None
        plan_t.append(TensorPlan("output", None, "bias", path, (hp["vocab_size"],), kind="vector"))

    def output_of_gemma2(self, tied: bool, out, hp):
        """gemma2's output layer is the token embedding. llama.cpp's gemma2 caps the
        attention's scores and the logits by c * tanh(x / c), always (50 and 30 when the file
        doesn't say): `softcaps` writes the source's."""
        if self.arch != "gemma2":
            return
        if not tied:
            self.depart(out, "output", "the output layer has a weight of its own")

    def softcaps(self, hp):
        """The attention's and the logits' softcaps (v0.3): gemma2 writes them (one for every
        attention), caps so large that they change nothing (`NO_CAP`) where the source has
        none; another architecture has none (the importer's matching records them, for
        E3316)."""
        caps = [(v, n) for v, n in self.attn_caps + ([self.final_cap] if self.final_cap else [])]
        for v, n in caps:
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise Depart(n, f"a softcap is computed{line_of(n)}; llama.cpp stores one number")
        if caps and self.arch != "gemma2" and not self.importing:
            raise Depart(caps[0][1], f"{'the logits are' if caps[0] is self.final_cap else 'the attention is'} capped "
                                     f"(softcap){line_of(caps[0][1])}, where {self.arch} caps nothing")
        for v, n in self.attn_caps[1:]:
            if v != self.attn_caps[0][0]:
                raise Depart(n, f"this attention's softcap is {v}{line_of(n)}, where the first's is "
                                f"{self.attn_caps[0][0]}: llama.cpp has one")
        if self.arch == "gemma2" or caps:
            hp["softcaps"] = {"attn_softcap": float(self.attn_caps[0][0]) if self.attn_caps else NO_CAP,
                              "final_softcap": float(self.final_cap[0]) if self.final_cap else NO_CAP}

    def embedding_scale(self, tok, scaled, hp):
        """gemma2's and gemma3's token embedding times sqrt(D); no other architecture scales it."""
        D = hp["embedding_length"]
        if not FAMILIES[self.arch].scaled_embedding:
            if scaled is not None:
                node, v = scaled[2], scaled[1]
                raise Depart(node, f"the token embedding is scaled by {v:g}{line_of(node)}, where {self.arch} "
                                   f"has {has(self.arch, 'embedding')}")
            return
        if scaled is None:
            self.depart(tok, "embedding", "the residual stream starts from the token embedding unscaled")
        if not math.isclose(scaled[1], math.sqrt(D), rel_tol=1e-6):
            self.depart(scaled[2], "embedding", f"the token embedding is scaled by {scaled[1]:g}")

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
        raise Depart(n, f"the residual stream starts from `{n.op}`{line_of(n)}, "
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
        plan_t.append(TensorPlan("token_embedding", None, "weight", tok_path, (V, D)))
        if self.arch == "gpt2":
            if len(embeds) != 2:
                self.depart(tok, "embedding", "the residual stream starts from the token embedding alone")
            pos_node, pos_path = embeds[1]
            if self.arg(pos_node, "ids").op != "input":
                raise Depart(pos_node, f"the position embedding looks up computed indices{line_of(pos_node)}, "
                                        f"where gpt2 looks up the positions")
            P = self.arg(pos_node, "E").shape[0]
            hp["context_length"] = P
            plan_t.append(TensorPlan("position_embedding", None, "weight", pos_path,
                                     tuple(self.arg(pos_node, "E").shape)))
        else:
            hp["context_length"] = DEFAULT_CONTEXT
        return hp

    def hparams(self, hp) -> dict:
        out = {"vocab_size": hp["vocab_size"], "context_length": hp["context_length"],
               "embedding_length": hp["embedding_length"], "block_count": hp["blocks"],
               "feed_forward_length": hp["ffn"], "head_count": hp["heads"],
               "head_count_kv": hp["kv_heads"]}
        if "experts" in hp:  # v0.3: each block's mixture (experts.py)
            out["expert_count"], out["expert_used_count"] = hp["experts"]
            if self.arch == "qwen3moe":  # its experts' width has a key of its own
                out["expert_feed_forward_length"] = hp["ffn"]
        fam = FAMILIES[self.arch]
        out["ln_eps" if fam.norm == "layer_norm" else "rms_eps"] = hp["eps"]
        if fam.rope_style is not None:
            out["rope_dim"] = hp.get("rotary_dims", hp["head_width"])
            out["freq_base"] = hp["theta"]
        if hp["heads"] * hp["head_width"] != hp["embedding_length"] or self.arch in ("gemma3", "gemma2"):
            out["key_length"] = out["value_length"] = hp["head_width"]
        out.update(hp.get("windows", {}))
        out.update(hp.get("softcaps", {}))
        out.update(hp.get("rope_scaling", {}))
        if self.arch == "gptneox":  # its blocks side by side or in turn
            out["parallel_residual"] = hp["parallel"]
        return out

    def windows(self) -> dict:
        """gemma2's and gemma3's per-layer settings as llama.cpp reads them: one window for the layers
        that have one (`sliding_window`, which layers: `sliding_window_pattern`), one rope
        theta for those (`rope.freq_base_swa`) and one for the others (`rope.freq_base`)."""
        layers = self.layer_attn
        swa = [x for x in layers if x[1] is not None]
        full = [x for x in layers if x[1] is None]
        if self.arch == "gemma2":  # one rope theta for every layer
            for theta, _, att, _ in layers[1:]:
                if theta != layers[0][0]:
                    raise Depart(att, f"this layer's rope theta is {_num(theta)}{line_of(att)}, where the first's "
                                      f"is {_num(layers[0][0])}: gemma2 has one theta")
        for group, what in ((swa, "sliding-window"), (full, "full-attention")):
            for theta, _, att, _ in group[1:]:
                if theta != group[0][0]:
                    raise Depart(att, f"this {what} layer's rope theta is {_num(theta)}{line_of(att)}, where the "
                                      f"first {what} layer's is {_num(group[0][0])}: {self.arch} has one theta "
                                      f"for each kind of layer")
        for _, w, att, _ in swa[1:]:
            if w != swa[0][1]:
                raise Depart(att, f"this attention's window is {_num(w)}{line_of(att)}, where the first's is "
                                  f"{_num(swa[0][1])}: {self.arch} has one sliding window")
        if not swa:
            return {"freq_base": full[0][0]}
        out = {"freq_base": (full or swa)[0][0], "freq_base_swa": swa[0][0], "sliding_window": int(swa[0][1]),
               "sliding_window_pattern": [w is not None for _, w, _, _ in layers]}
        if self.arch == "gemma2":
            del out["freq_base_swa"]
        return out

    # ------------------------------------------------------------ blocks
    def parallel(self, n):
        """(the `+`, x, one branch, the other) where `n` adds x and two branches that each
        read x and not each other (phi2's x + attn(h) + mlp(h), in any grouping); None
        for anything else (a sequential sublayer's branch reads all of x)."""
        if n.op != "add" or len(n.inputs) != 2:
            return None
        for inner, other in (n.inputs, n.inputs[::-1]):
            if inner.op != "add" or len(inner.inputs) != 2:
                continue
            p, q = inner.inputs
            for x, b1, b2 in ((p, q, other), (q, p, other), (other, p, q)):
                if self.is_ancestor(x, b1) and self.is_ancestor(x, b2) and not self.is_ancestor(b1, b2) \
                        and not self.is_ancestor(b2, b1):
                    return n, x, b1, b2
        return None

    def grouped(self, subs, stream) -> list:
        """The blocks, each ((add, x, branch), (add, x, branch)) of two sublayers in turn, or
        (add, x, branch, branch) of two side by side (phi2)."""
        par = [s for s in subs if len(s) == 4]
        if par and not FAMILIES[self.arch].parallel:
            raise Depart(par[0][0], f"this `+`{line_of(par[0][0])} joins two sublayers side by side (a parallel "
                                    f"block), where {self.arch} has {has(self.arch, 'block')}")
        if par:
            seq = [s for s in subs if len(s) == 3]
            if seq:
                raise Depart(seq[0][0], f"this sublayer adds to the residual stream on its own{line_of(seq[0][0])}, "
                                        f"where the others are side by side: {self.arch} has "
                                        f"{has(self.arch, 'block')}")
            return par
        if len(subs) % 2 or not subs:
            raise Depart(subs[-1][0] if subs else stream,
                         f"the blocks have {len(subs)} sublayers{line_of(subs[-1][0] if subs else stream)}, "
                         f"where {self.arch} has {has(self.arch, 'block')}")
        return [(subs[i], subs[i + 1]) for i in range(0, len(subs), 2)]

    def reads_one_norm(self, block) -> bool:
        """Do a parallel block's two branches read one norm of x (phi2), not one each?"""
        _, x, b1, b2 = block
        try:
            return self.norm_of(b1, x) is self.norm_of(b2, x)
        except Depart:
            return False

    def side_by_side(self, block) -> tuple:
        """A parallel block as its two sublayers, ((add, x, attention), (add, x, MLP)), that
        read one norm (phi2) or one each (gptneox)."""
        add, x, b1, b2 = block
        a1, a2 = self.has_attention(b1, x), self.has_attention(b2, x)
        if a1 == a2:
            self.depart(add, "block", f"the block's two branches have {'an attention each' if a1 else 'no attention'}")
        a_branch, m_branch = (b1, b2) if a1 else (b2, b1)
        h, h2 = self.norm_of(a_branch, x), self.norm_of(m_branch, x)
        if (h is h2) != FAMILIES[self.arch].one_norm:
            self.depart(h2, "block", "the MLP reads " + ("a norm of its own" if h is not h2 else "the attention's norm"))
        return (add, x, a_branch), (add, x, m_branch)

    def blocks(self, blocks, hp, plan_t):
        hp["blocks"] = len(blocks)
        features: set = set()
        per_block = []
        gemma = self.arch == "gemma3"
        hp["parallel"] = bool(blocks) and len(blocks[0]) == 4
        for blk, block in enumerate(blocks):
            (a_add, a_res, a_branch), (m_add, m_res, m_branch) = \
                self.side_by_side(block) if hp["parallel"] else block
            tensors: list = []
            a_post = m_post = None
            if gemma:
                a_branch, a_post = self.post_norm(a_add, a_branch, "block's first sublayer")
                m_branch, m_post = self.post_norm(m_add, m_branch, "block's second sublayer")
            if not self.has_attention(a_branch, a_res):
                self.depart(a_add, "block", "the block's first sublayer has no attention")
            if self.has_attention(m_branch, m_res):
                self.depart(m_add, "block", "the block's second sublayer has an attention")
            h = self.norm_of(a_branch, a_res)
            self.norm(h, "attn_norm", hp, tensors, blk)
            features |= self.attention(a_branch, h, hp, tensors, blk)
            if a_post is not None:
                self.norm(a_post, "attn_post_norm", hp, tensors, blk)
            h2 = self.norm_of(m_branch, m_res)
            if not (hp["parallel"] and FAMILIES[self.arch].one_norm):  # phi2's MLP reads the attention's norm
                self.norm(h2, "ffn_norm", hp, tensors, blk)  # gemma's "pre" norm too (roles.py)
            if is_mixture(m_branch):  # v0.3: a mixture of experts in the MLP's place (experts.py)
                if blk and "experts" not in features:
                    self.depart(m_branch, "experts", "this block's MLP is a mixture of experts, block 0's dense")
                features |= self.experts(m_branch, h2, hp, tensors, blk, features)
            else:
                if "experts" in features:
                    self.depart(m_branch, "experts", "this block's MLP is dense, block 0's a mixture of experts")
                self.mlp(m_branch, h2, hp, tensors, blk)
            if m_post is not None:
                self.norm(m_post, "ffn_post_norm", hp, tensors, blk)
            per_block.append(tensors)
        if self.arch == "llama" and features - {"experts"}:
            self.arch = "qwen3" if "qk_norm" in features else "qwen2"
        if "experts" in features:  # Mixtral is llama's; Qwen3-MoE has its own
            self.arch = {"llama": "llama", "qwen3": "qwen3moe"}.get(self.arch, self.arch)
            if not FAMILIES[self.arch].experts:
                raise Depart(self.first_mixture, f"the MLP is a mixture of experts{line_of(self.first_mixture)}, "
                                                 f"where {self.arch} has {has(self.arch, 'experts')}") from None
        if gemma and "qk_norm" not in features:
            self.arch = "gemma2"  # no per-head norms
        self.rope_fits(hp)
        for tensors in per_block:
            for t in tensors:
                plan_t.append(self.finish(t, hp))

    def finish(self, t, hp):
        """Fill in the rope permutation now that the architecture (llama, qwen2, qwen3) is known."""
        if not isinstance(t, tuple):
            return t
        tp, rope_heads, style = t
        want = FAMILIES[self.arch].rope_style
        if want is None or style == want:
            return tp
        return TensorPlan(tp.name, tp.block, tp.suffix, tp.source, tp.shape,
                          tp.steps + (RopePermute(rope_heads, want, hp.get("rotary_dims")),), tp.kind)

    def post_norm(self, add, branch, what: str) -> tuple:
        """(the sublayer, its norm) of gemma3's x + rms_norm(sublayer(...)); departs at the `+`."""
        if branch.op != "rms_norm":
            self.depart(add, "block", f"the {what}'s output is added to the residual stream without a norm")
        return self.arg(branch, "x"), branch

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
        want = FAMILIES[self.arch].norm
        if n.op != want:
            self.depart(n, "norm", f"the model normalizes with {n.op}")
        eps = n.attrs.get("eps", 1e-5 if want == "layer_norm" else 1e-6)
        if "eps" in n.attrs.get("args", {}) and "eps" not in n.attrs:
            raise Depart(n, f"the norm's eps is computed{line_of(n)}; llama.cpp stores one number")
        if hp["eps"] is None:
            hp["eps"] = float(eps)
        elif not math.isclose(hp["eps"], eps, rel_tol=1e-9):
            raise Depart(n, f"this norm's eps is {eps}{line_of(n)}, where the others' is {hp['eps']}: "
                             f"{self.arch} has one eps")
        D = hp["embedding_length"]
        if [self.prog.value_of(s) for s in n.attrs.get("over", [])] != [D]:
            raise Depart(n, f"the norm works over {', '.join(n.attrs.get('over_names', []))}{line_of(n)}, "
                             f"where {self.arch} normalizes the model width")
        w, steps = self.norm_weight(n, "norm weight")
        tensors.append(TensorPlan(name, blk, "weight", w, (D,), steps, kind="vector"))
        if want == "layer_norm":
            b = self.param(self.arg(n, "b"), "norm bias")
            tensors.append(TensorPlan(name, blk, "bias", b, (D,), kind="vector"))

def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def match(tr, importing: bool = False):
    """A GGUFPlan for the trace, or the Departure E3313 reports. `importing`: the
    importer's matching, where a sliding window changes no role (Mistral is llama's
    layout), nor does a mixture's routing (OLMoE's and Qwen3-MoE's without norm_topk_prob
    name their tensors as Mixtral's): recorded, never a departure."""
    m = ArchMatcher(tr, importing)
    try:
        return m.run()
    except Depart as d:
        return Departure(m.arch, d.reason, d.node)
