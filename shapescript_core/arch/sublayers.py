"""The matcher's two sublayers: attention (q, k, v, rope, the grouped heads, the output
projection; gpt2's one attn_qkv; gemma2's and gemma3's window, theta and scale per
layer) and the MLP (SwiGLU for the llama family, GeGLU for gemma2/3, gelu_tanh for gpt2),
each adding its tensors to the plan of its block.
"""
from __future__ import annotations

import logging
import math

from ..check.rope_scaling import number_text
from ..compile.attention_plan import plan_attention
from ..compile.graph import UNFOLDED, CompileError, fold, rope_setting
from .archs import FAMILIES, has
from . import rope_gguf
from .departure import Depart, line_of
from .plan import Gather, Scale, TensorPlan, Transpose
from .projections import UNARY, Proj, input_of, is_projection


log = logging.getLogger(__name__)


def llama_cpp_scale(arch: str, blocks, D: int, H: int, Dh: int) -> float:
    """The query scale llama.cpp's gemma2 and gemma3 use (they read none from the file):
    1/sqrt(Dh), or 1/sqrt(D / H) at the size llama.cpp knows as their 27B (46 layers for
    Gemma 2, 62 for Gemma 3)."""
    big = FAMILIES[arch].wide_scale_blocks
    return 1 / math.sqrt(D // H) if big is not None and blocks == big else 1 / math.sqrt(Dh)


class Sublayers:
    """Matcher methods for attention and MLPs (mixed into `match.Matcher`)."""

    def rope_setting(self, qr, kr, hp):
        """The ropes' scaling and rotated width (v0.3), the same for queries and keys and in
        every layer; recorded for the importer (E3316); for the GGUF export, written as
        llama.cpp reads them (rope_gguf.py): a scaling or width the architecture can't run
        is a departure."""
        _, kind, values, dims = rope_setting(qr.attrs)
        for r in (qr, kr):
            here = rope_setting(r.attrs)[1:]
            if here[2] is UNFOLDED or any(v is UNFOLDED for _, v in here[1]):
                raise Depart(r, f"rope's scaling or rotary_dims is computed{line_of(r)}; llama.cpp stores numbers")
            if here != (kind, values, dims) or hp.setdefault("rope", here) != here:
                raise Depart(r, f"this rope's scaling or rotary_dims differs from the others'{line_of(r)}")
        if self.importing:
            return
        width, values = qr.shape[-1], dict(values)
        hp["rope_node"] = qr  # what `rope_fits` checks once the architecture is known
        if dims is not None and dims != width:
            hp["rotary_dims"] = int(dims)
        if kind == "linear":  # llama.cpp's rope.scaling.type linear, its factor
            hp["rope_scaling"] = {"rope_scaling_type": "linear", "rope_scaling_factor": float(values["factor"])}
        elif kind == "llama3":
            theta = float(qr.attrs.get("theta", 10000.0))
            hp["rope_freqs"] = rope_gguf.llama3_factors(theta, int(dims or width), values)
        elif kind == "yarn":
            betas = (float(values["beta_fast"]), float(values["beta_slow"]))
            if betas != rope_gguf.LLAMA_CPP_BETAS:
                raise Depart(qr, f"rope's yarn betas are {number_text(betas[0])} and {number_text(betas[1])}{line_of(qr)}, where "
                                 "llama.cpp reads no beta from the file: it uses 32 and 1")
            hp["rope_scaling"] = rope_gguf.yarn_hparams(values)

    def rope_fits(self, hp):
        """What of the ropes' v0.3 settings the architecture (known once every block is
        matched) reads: a rope over part of each head as `rope.dimension_count` (llama.cpp's
        llama refuses such a file, its qwen2 aborts in the graph), llama3's divisors as a
        `rope_freqs` tensor (its qwen2 and qwen3 refuse a file that has one)."""
        r = hp.get("rope_node")
        if "rotary_dims" in hp and not FAMILIES[self.arch].partial_rotary:
            part = [f.name for f in FAMILIES.values() if f.partial_rotary]
            raise Depart(r, f"rope rotates {hp['rotary_dims']} of the head's {r.shape[-1]} features{line_of(r)}, "
                            f"where llama.cpp's {self.arch} rotates them all"
                            + (f" (its {' and '.join(part)} rotate part)" if part else ""))
        if "rope_freqs" in hp and not FAMILIES[self.arch].rope_freqs:
            raise Depart(r, f"rope is scaled as llama3{line_of(r)}: llama.cpp reads its per-frequency "
                            f"factors (rope_freqs) only as llama, not as {self.arch}")

    # ------------------------------------------------------------ attention
    def attention_site(self, att):
        """The compiler's plan entry for a traced attention, found by its call's syntax node."""
        if self.attention_plan is None:
            try:
                self.attention_plan = plan_attention(self.prog)
            except CompileError as e:
                raise Depart(att, f"the attention's heads can't be planned{line_of(att)}: {e}") from None
        site = self.attention_plan.site_of_call(att.ast)
        if site is None:
            log.error("internal error: the attention%s has no entry in the attention plan", line_of(att))
            raise Depart(att, f"internal error: the attention{line_of(att)} has no entry in the attention plan")
        return site

    def attention(self, branch, h, hp, tensors, blk) -> bool:
        """Adds the block's attention tensors; the features that tell the llama family's
        members apart: "bias" (q/k/v biases: qwen2), "qk_norm" (per-head norms: qwen3)."""
        gpt2 = self.arch == "gpt2"
        fused = FAMILIES[self.arch].fused_qkv  # gpt2's and gptneox's one attn_qkv
        gemma = self.arch == "gemma3"  # gemma2 too: told apart when every block is read
        wo = branch
        if not is_projection(wo):
            raise Depart(wo, f"the attention's output goes through `{wo.op}`{line_of(wo)}, where "
                             f"{self.arch} adds an output projection's result to the residual stream")
        out = Proj(wo, None)
        flat = input_of(wo)
        if flat.op != "rearrange":
            raise Depart(flat, f"the attention's heads are merged by `{flat.op}`{line_of(flat)}")
        pat = flat.attrs["pattern"]
        src, dst = pat.as_data()["inputs"][0], pat.as_data()["output"]
        att = flat.inputs[0]
        if att.op != "scaled_dot_product_attention":
            raise Depart(att, f"the attention's output goes through `{att.op}`{line_of(att)}, where "
                               f"{self.arch} merges the heads of the attention directly")
        if len(src) < 4 or not isinstance(dst[-1], list) or len(dst[-1]) != 2 or \
                set(dst[-1]) != {src[-3], src[-1]} or dst[:-1] != [src[0], src[-2]][:len(dst) - 1]:
            raise Depart(flat, f"the attention's heads are merged as ({' '.join(map(str, dst[-1]))}) "
                                f"in a way llama.cpp can't follow{line_of(flat)}")
        col_perm = None if dst[-1] == [src[-3], src[-1]] else (1, 0)
        scale = att.attrs.get("scale")
        if "scale" in att.attrs.get("args", {}) and scale is None:
            raise Depart(att, f"the attention's scale is computed{line_of(att)}, where {self.arch} has "
                               f"{has(self.arch, 'scale')}")
        site = self.attention_site(att)  # groups and key/value heads: the compiler's plan
        q = self.head_chain(self.arg(att, "q"), h, "queries", want_rope=not gpt2)
        k = self.head_chain(self.arg(att, "k"), h, "keys", want_rope=not gpt2, stored=site.stored["k"])
        v = self.head_chain(self.arg(att, "v"), h, "values", want_rope=False, stored=site.stored["v"])
        window = att.attrs.get("window")
        if window is None and self.arg(att, "window") is not None:
            window = fold(self.arg(att, "window"), self.prog)
            if window is None:
                raise Depart(att, f"the attention's window is computed{line_of(att)}; llama.cpp stores one number")
        bound = self.positions_bound(self.arg(q.rope, "pos")) if q.rope is not None else None
        if window is not None and bound is not None and window >= bound:
            window = None  # it drops no key of any sequence the model takes: full attention
        if gemma and bound is not None:
            hp["context_length"] = bound  # no sequence is longer
        if window is not None and not gemma:
            if not self.importing:
                if self.arch == "llama":  # the family this attention's own features name (blocks() does it later)
                    self.arch = "qwen3" if q.norm is not None else \
                        "qwen2" if any(p.b is not None for p in (q, k, v)) else "llama"
                self.depart(att, "window", f"the attention has a sliding window of {window}")
            hp.setdefault("windows", {"sliding_window": int(window)})
        if not gemma and scale is not None and \
                not math.isclose(float(scale), 1 / math.sqrt(q.width), rel_tol=1e-6):
            raise Depart(att, f"the attention's scale is {scale}{line_of(att)}, where {self.arch} has "
                               f"{has(self.arch, 'scale')}")
        if q.repeat is not None:
            self.depart(q.repeat, "qk", "the queries are repeated")
        if k.groups != v.groups or k.heads != v.heads or q.heads != k.heads * k.groups:
            raise Depart(att, f"keys and values have {k.heads}x{k.groups} and {v.heads}x{v.groups} heads "
                               f"for {q.heads} query heads{line_of(att)}")
        if not (q.width == k.width == v.width):
            raise Depart(att, f"queries, keys and values have widths {q.width}, {k.width}, {v.width}{line_of(att)}")
        H, Hkv, Dh = q.heads, site.stored["k"].heads, q.width
        if k.group_major != v.group_major:
            raise Depart(v.repeat, f"keys and values are repeated in different orders{line_of(v.repeat)}, where "
                                    f"{self.arch} repeats both the same way")
        # query heads (and the output projection's columns) from (G Hkv) order into (Hkv G)
        regroup = (Gather(0, (k.groups, Hkv, Dh), None, (1, 0, 2)),) if k.group_major else ()
        for key, val, node in (("heads", H, att), ("kv_heads", Hkv, att), ("head_width", Dh, att)):
            if hp.setdefault(key, val) != val:
                raise Depart(node, f"this attention has {val} where the first has {hp[key]}{line_of(node)}: "
                                    f"llama.cpp has one {key.replace('_', ' ')}")
        if self.arg(att, "softcap") is not None:  # v0.3: checked with the logits' (match.softcaps)
            cap = att.attrs.get("softcap")
            self.attn_caps.append((cap if cap is not None else fold(self.arg(att, "softcap"), self.prog), att))
        if q.rope is not None:
            self.rope_setting(q.rope, k.rope, hp)
            theta = float(q.rope.attrs.get("theta", 10000.0))
            for r in (q.rope, k.rope):
                style = r.attrs.get("style", "half")
                t = float(r.attrs.get("theta", 10000.0))
                if style not in ("half", "interleaved"):
                    raise Depart(r, f"rope's style is {style}{line_of(r)}")
                if t != theta or (not gemma and hp["theta"] is not None and t != hp["theta"]):
                    raise Depart(r, f"rope's theta is {t}{line_of(r)}, where the others' is "
                                     f"{hp['theta'] or theta}: llama.cpp has one theta")
                if r.attrs.get("style", "half") != q.rope.attrs.get("style", "half"):
                    raise Depart(r, f"the keys' rope style differs from the queries'{line_of(r)}")
            if gemma:
                self.layer_attn.append((theta, window, att, q.norm is None))  # checked by `windows`
            else:
                hp["theta"] = theta
            hp.setdefault("rope_style", q.rope.attrs.get("style", "half"))
            if hp["rope_style"] != q.rope.attrs.get("style", "half"):
                raise Depart(q.rope, f"this rope's style differs from the first's{line_of(q.rope)}")
        D = hp["embedding_length"]
        biases = [p.b is not None for p in (q, k, v)]
        if (q.norm is None) != (k.norm is None) or (q.norm is not None and gpt2):
            n = q.norm or k.norm
            raise Depart(n, f"only the {'queries' if q.norm is not None else 'keys'} are normalized per head"
                            f"{line_of(n)}, where " + ("gemma3 normalizes both and gemma2 neither" if gemma else
                                                       f"qwen3 normalizes both and {self.arch} neither"))
        if gemma and self.layer_attn and (q.norm is None) != self.layer_attn[0][3]:
            raise Depart(q.lin, f"the queries and keys are {'not ' if q.norm is None else ''}normalized per head"
                                f"{line_of(q.lin)}, where the first layer's are{'' if q.norm is None else ' not'}: "
                                f"gemma3 normalizes them in every layer, gemma2 in none")
        if gemma and any(biases):
            p = next(p for p, b in zip((q, k, v), biases) if b)
            self.depart(p.lin, "bias", "the projections have biases")
        if q.norm is not None and any(biases):
            raise Depart(q.norm, f"the queries are normalized per head{line_of(q.norm)} and q, k, v have "
                                 f"biases: qwen2 has the biases, qwen3 the norms, none both")
        if fused:
            if q.rope is not None and hp["rope_style"] != FAMILIES[self.arch].rope_style:
                raise Depart(q.rope, f"rope rotates {hp['rope_style']} pairs{line_of(q.rope)}, where {self.arch} "
                                     f"rotates halves")
            self.fused_qkv(q, k, v, D, tensors, blk)
        else:
            if out.b is not None and not FAMILIES[self.arch].biased:
                raise Depart(wo, f"the attention's output projection has a bias{line_of(wo)}, where "
                                  f"{self.arch} has {has(self.arch, 'bias')}")
            style = hp.get("rope_style", "half")
            # gemma3 scales the query norm's weights, gemma2 (no per-head norm) the query rows
            folded = self.folded_scale(scale, Dh, hp, "gemma3" if q.norm is not None else "gemma2") if gemma else ()
            for p, name, heads in ((q, "attn_q", H), (k, "attn_k", Hkv), (v, "attn_v", Hkv)):
                rows = p.steps + (regroup if p is q else ()) + (folded if p is q and q.norm is None else ())
                tp = TensorPlan(name, blk, "weight", self.param(p.W, "weight"), tuple(p.W.shape), rows)
                tensors.append((tp, heads, style) if name != "attn_v" else tp)
                if any(biases) or FAMILIES[self.arch].biased:  # qwen2, phi2: zeros where the source has none
                    b = (TensorPlan(name, blk, "bias", self.param(p.b, "bias"), tuple(p.b.shape), rows,
                                    kind="vector") if p.b is not None
                         else TensorPlan(name, blk, "bias", None, (heads * Dh,), kind="vector"))
                    tensors.append((b, heads, style) if name != "attn_v" else b)
            for p, name in ((q, "attn_q_norm"), (k, "attn_k_norm")):
                if p.norm is not None:
                    self.head_norm_eps(p.norm, hp)
                    w, steps = self.norm_weight(p.norm, "norm weight")
                    tp = TensorPlan(name, blk, "weight", w, (Dh,), steps + (folded if p is q else ()), kind="vector")
                    tensors.append((tp, 1, style))  # one head's rows: permuted as each head's
        cols = (Gather(1, (H, Dh) if dst[-1][0] == src[-3] else (Dh, H), None, col_perm),) if col_perm else ()
        cols += tuple(Gather(1, g.shape, None, g.perm) for g in regroup)
        tensors.append(TensorPlan("attn_out", blk, "weight", self.param(out.W, "weight"), tuple(out.W.shape),
                                  out.steps + cols))
        if FAMILIES[self.arch].biased:
            self.bias(wo, "attn_out", (D,), tensors, blk)
        return ({"bias"} if any(biases) else set()) | ({"qk_norm"} if q.norm is not None else set())

    def positions_bound(self, pos):
        """P when the positions are `Index[P]` (no sequence is longer), else None. A window
        of at least P is full attention, as the Hugging Face export says (compile/windows.py)."""
        dt = getattr(getattr(pos, "type", None), "dtype", None)
        if dt is None or dt.name != "Index" or getattr(dt, "index", None) is None:
            return None
        return self.prog.value_of(dt.index)

    def folded_scale(self, scale, Dh: int, hp, arch: str) -> tuple:
        """(Scale(r),) for the query norm (gemma3) or rows (gemma2) when the source's
        attention scale isn't the one llama.cpp uses (`llama_cpp_scale`); () if it is."""
        want = float(scale) if scale is not None else 1 / math.sqrt(Dh)
        r = want / llama_cpp_scale(arch, hp.get("blocks"), hp["embedding_length"], hp["heads"], Dh)
        return () if math.isclose(r, 1.0, rel_tol=1e-9) else (Scale(r),)

    def head_norm_eps(self, n, hp):
        eps = n.attrs.get("eps", 1e-6)
        if "eps" in n.attrs.get("args", {}) and "eps" not in n.attrs:
            raise Depart(n, f"the norm's eps is computed{line_of(n)}; llama.cpp stores one number")
        if hp["eps"] is not None and not math.isclose(hp["eps"], eps, rel_tol=1e-9):
            raise Depart(n, f"this norm's eps is {eps}{line_of(n)}, where the others' is {hp['eps']}: "
                            f"{'qwen3' if self.arch == 'llama' else self.arch} has one eps")

    def fused_qkv(self, q, k, v, D, tensors, blk):
        """gpt2's one attn_qkv: rows [q; k; v], each head-major, from one fused projection
        (re-ordered when its pattern laid the rows out another way) or from separate ones."""
        if q.groups != 1:
            raise Depart(k.repeat, f"keys and values are repeated{line_of(k.repeat)}: {self.arch} has as many "
                                    f"key/value heads as query heads")
        rows = 3 * q.heads * q.width
        fused = q.lin is k.lin is v.lin and [p.gather.take[1] for p in (q, k, v)] == [0, 1, 2]
        if fused:
            g = q.gather
            pos, sub = g.take[0], g.perm or (0, 1)
            rest = [i for i in range(3) if i != pos]
            perm = (pos, rest[sub[0]], rest[sub[1]])
            steps = ((Transpose(),) if q.lin.op != "linear" else ()) + \
                ((Gather(0, g.shape, None, perm),) if perm != (0, 1, 2) else ())
            tensors.append(TensorPlan("attn_qkv", blk, "weight", self.param(q.W, "weight"), tuple(q.W.shape),
                                      steps))
            steps = tuple(s for s in steps if not isinstance(s, Transpose))  # the bias: rows only
            b = self.param(q.b, "bias") if q.b is not None else None
            tensors.append(TensorPlan("attn_qkv", blk, "bias", b, (rows,), steps, kind="vector"))
            return
        parts, bias_parts = [], []
        for p in (q, k, v):
            parts.append((self.param(p.W, "weight"), tuple(p.W.shape), p.steps))
            bias_parts.append((self.param(p.b, "bias"), tuple(p.b.shape), (p.gather,) if p.gather else ())
                              if p.b is not None
                              else (None, (p.heads * p.width,), ()))
        tensors.append(TensorPlan("attn_qkv", blk, "weight", None, (rows, D), parts=tuple(parts)))
        tensors.append(TensorPlan("attn_qkv", blk, "bias", None, (rows,), kind="vector", parts=tuple(bias_parts)))

    def bias(self, lin, name, shape, tensors, blk):
        b = Proj(lin, None).b
        path = self.param(b, "bias") if b is not None else None
        tensors.append(TensorPlan(name, blk, "bias", path, shape, kind="vector"))

    # ------------------------------------------------------------ MLP
    def mlp(self, branch, h, hp, tensors, blk):
        down = branch
        if not is_projection(down):
            self.depart(down, "mlp", f"the MLP ends in `{down.op}`")
        dp = Proj(down, None)
        act = input_of(down)
        D = hp["embedding_length"]
        if FAMILIES[self.arch].biased:  # gpt2, phi2, gptneox: proj(gelu_tanh(fc(h))), biases
            if act.op not in FAMILIES[self.arch].mlp_gelu:
                what = "gelu (exact, erf)" if act.op == "gelu" else act.op
                self.depart(act, "mlp", f"the MLP's activation is {what}")
            if act.op == "gelu" and "exact gelu" not in self.notes:
                self.notes.append("exact gelu")
            up = self.proj(act.inputs[0], h, "MLP's inputs", heads=False)
            F = self.width(act)
            self._ffn(hp, F, act)
            tensors.append(TensorPlan("ffn_up", blk, "weight", self.param(up.W, "weight"), tuple(up.W.shape),
                                      up.steps))
            rows = (up.gather,) if up.gather else ()
            tensors.append(TensorPlan("ffn_up", blk, "bias", self.param(up.b, "bias"), tuple(up.b.shape), rows,
                                      kind="vector") if up.b is not None
                           else TensorPlan("ffn_up", blk, "bias", None, (F,), kind="vector"))
            tensors.append(TensorPlan("ffn_down", blk, "weight", self.param(dp.W, "weight"), tuple(dp.W.shape),
                                      dp.steps))
            self.bias(down, "ffn_down", (D,), tensors, blk)
            return
        if act.op != "mul":
            what = f"{act.op} with no gate" if act.op in UNARY else f"`{act.op}`"
            self.depart(act, "mlp", f"the MLP's activation is {what}")
        a, b = act.inputs
        want = "gelu_tanh" if self.arch == "gemma3" else "silu"
        gate_act, up_n = (a, b) if a.op == want else (b, a) if b.op == want else (None, None)
        if gate_act is None:
            other = a if not is_projection(a) else b
            self.depart(other, "mlp", f"the MLP's gate uses `{other.op}`")
        gate = self.proj(gate_act.inputs[0], h, "MLP's gate", heads=False)
        up = self.proj(up_n, h, "MLP's up projection", heads=False)
        for p in (gate, up, ):
            if p.b is not None:
                raise Depart(p.lin, f"the MLP's projections have biases{line_of(p.lin)}, where {self.arch} "
                                     f"has {has(self.arch, 'bias')}")
        if dp.b is not None:
            raise Depart(down, f"the MLP's down projection has a bias{line_of(down)}, where {self.arch} "
                                f"has {has(self.arch, 'bias')}")
        F = self.width(gate_act)
        self._ffn(hp, F, act)
        for p, name in ((gate, "ffn_gate"), (up, "ffn_up")):
            tensors.append(TensorPlan(name, blk, "weight", self.param(p.W, "weight"), tuple(p.W.shape),
                                      p.steps))
        tensors.append(TensorPlan("ffn_down", blk, "weight", self.param(dp.W, "weight"), tuple(dp.W.shape),
                                  dp.steps))

    def _ffn(self, hp, F, node):
        if hp.setdefault("ffn", F) != F:
            raise Depart(node, f"this MLP is {F} wide{line_of(node)}, where the first is {hp['ffn']}: "
                                f"llama.cpp has one feed-forward length")
