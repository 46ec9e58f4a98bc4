"""Random well-typed ShapeScript programs, for differential testing (Csmith's way).

`generate(seed)` returns a `Case` (differential_support.py): one source with dims,
models with submodels and a stack, helper functions with size variables and scalar
parameters calling one another, every builtin and pattern form, scalar keywords from
literals, dims, parameters and arithmetic, a `for` over the stack, and an exported
`forward`. Half the programs are language models (`forward(m, ids, pos) -> [b n V]`,
written to pass the serving-engine checks: nothing mixes the token axis), half are
plain functions of `x: [b n D]` that may also work along it.

Programs are built from templates that are well typed by construction; the rare one
that does not check is counted, never exported. Everything is drawn from
`random.Random(seed)`: a seed is a program.
"""
from __future__ import annotations

import random

from differential_support import Case

UNARY = ["tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "relu", "abs", "neg", "sin", "cos"]
# v0.3's rope scalings, each with every keyword (LANGUAGE.md §6.1)
ROPE_V03 = ["", "", "", ', scaling="linear", factor=2.0',
            ', scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16',
            ', scaling="yarn", factor=4.0, original_positions=8, beta_fast=32.0, beta_slow=1.0, attention_factor=1.2']
BOUNDED = ["exp(tanh({e}))", "sqrt(abs({e}) + 1.0)", "log(abs({e}) + 1.0)", "rsqrt(square({e}) + 1.0)",
           "square(tanh({e}))"]


class Fn:
    def __init__(self, name, b, n, model=None, scalar=True, ret="D"):
        self.name, self.b, self.n, self.model, self.scalar, self.ret = name, b, n, model, scalar, ret
        self.default = False  # its scalar parameter has a default


class Gen:
    def __init__(self, seed: int, lm: bool, v03: bool = True):
        self.r = random.Random(seed)
        self.v03 = v03  # False: the programs the generator made before v0.3 (the same seeds)
        # v0.3's features (rope scaling, rotary_dims, softcaps) draw from a stream of their own,
        # so that the programs of every seed keep the rest of what they were before
        self.r3 = random.Random(seed + 1_000_003)
        # mixtures of experts and attention sinks (v0.3, §6.2) likewise: a stream of their own
        self.r33 = random.Random(seed + 2_000_003)
        self.moe = v03 and self.r33.random() < 0.3
        self.sinks = v03 and self.r33.random() < 0.2
        self.lm = lm
        self.fns: list = []  # helpers, callable by the ones defined before them
        self.lines: list = []

    def pick(self, *xs):
        return self.r.choice(xs)

    def chance(self, p):
        return self.r.random() < p

    # ------------------------------------------------------------ scalars
    def scalar(self, kind: str, s: str | None) -> str:
        """A positive scalar expression for a keyword: literal, dim, parameter, arithmetic."""
        r = self.r
        lit = {"eps": ["1e-5", "0.5", "0.01", "1e-6"], "theta": ["10000.0", "3.0", "500.0", "100"],
               "scale": ["0.5", "0.25", "1.5", "2"], "mul": ["0.5", "2.0", "1.5", "3"]}[kind]
        dim = {"eps": ["1 / D", "1 / Dh", "D / 1000", "sqrt(Dh) / 100"], "theta": ["Dh * 100", "D * D", "500.0 + D"],
               "scale": ["1 / sqrt(Dh)", "Dh / D", "2 / Dh"], "mul": ["Dh / D", "1 / H", "H"]}[kind]
        par = {"eps": ["{s}", "{s} * 0.1", "{s} / Dh", "{s} * {s}"], "theta": ["{s} * 1000", "{s} * 100 + Dh", "1000 / {s}"],
               "scale": ["{s}", "{s} / sqrt(Dh)", "1 / ({s} + 1)"], "mul": ["{s}", "{s} + 0.5", "sqrt({s})"]}[kind]
        choices = [lit, dim] + ([par] if s else [])
        return r.choice(r.choice(choices)).format(s=s)

    # ------------------------------------------------------------ tensor expressions
    def expr(self, env: list, f: Fn, depth: int, blk: str | None) -> str:
        """A [b n D] expression (b, n: f's axis names) over the locals `env`."""
        e = self._expr(env, f, depth, blk)
        return f"({e})" if "|>" in e else e  # a pipe binds loosest

    def _expr(self, env: list, f: Fn, depth: int, blk: str | None) -> str:
        r = self.r
        B, N = f.b, f.n
        if depth <= 0 or r.random() < 0.25:
            return r.choice(env)
        e = lambda: self.expr(env, f, depth - 1, blk)  # noqa: E731
        s = "s" if f.scalar else None
        opts = ["unary", "bounded", "binop", "scalar_mul", "norm", "softmax", "heads", "reduce", "minmax",
                "where", "dot", "repeat", "to", "orders", "subset", "logic", "power"]
        if blk:
            opts += ["linear", "mlp", "matmul", "lnorm", "bias", "einsum_w", "argmax", "norm_inner"]
            if self.moe:  # v0.3: appended, so that programs without it draw as before
                opts += ["experts", "take"]
        if not self.lm:
            opts += ["over_n", "softmax_n", "total", "mix_n", "pool", "shift"]
        callable_fns = [g for g in self.fns if g.name != f.name and self.fns.index(g) > self.fns.index(f)] \
            if f in self.fns else list(self.fns)
        if callable_fns:
            opts += ["call", "call"]
        k = r.choice(opts)
        if k == "unary":
            u = r.choice(UNARY)
            if self.v03 and self.r3.random() < 0.15:  # v0.3
                return f"softcap({e()}, {self.r3.choice(['2.5', 'Dh', '0.5 * D'])})"
            return f"{u}({e()})"
        if k == "bounded":
            return r.choice(BOUNDED).format(e=e())
        if k == "binop":
            return f"({e()} {r.choice('+-*')} {e()})"
        if k == "scalar_mul":
            return self.pick(f"scale({e()}, {self.scalar('mul', s)})", f"({e()} * {self.scalar('mul', s)})",
                             f"({e()} / ({self.scalar('mul', s)}))", f"{e()} |> scale({self.scalar('mul', s)})")
        if k == "norm":
            w = f"{blk}.n1" if blk else "ones_D"
            if not blk:
                return f"({e()} * rsqrt(mean(square({e()}), over=D) + {self.scalar('eps', s)}))"
            return f"rms_norm({e()}, {w}, over=D, eps={self.scalar('eps', s)})"
        if k == "lnorm":
            if self.chance(0.3):
                return f"layer_norm({e()}, {blk}.n1, {blk}.b1, over=D)"
            return f"layer_norm({e()}, {blk}.n1, {blk}.b1, over=D, eps={self.scalar('eps', s)})"
        if k == "softmax":
            return self.pick(f"softmax({e()}, over=D)", f"log_softmax({e()}, over=D)",
                             f"{e()} |> rearrange({B} {N} (H Dh) -> {B} {N} H Dh) |> softmax(over=Dh) "
                             f"|> rearrange({B} {N} H Dh -> {B} {N} (H Dh))")
        if k == "heads":
            return self.pick(f"{e()} |> rearrange({B} {N} (H Dh) -> {B} H {N} Dh) |> rearrange({B} H {N} Dh -> {B} {N} (H Dh))",
                             f"{e()} |> rearrange({B} {N} (H Dh) -> {B} {N} Dh H) |> rearrange({B} {N} Dh H -> {B} {N} (H Dh))",
                             f"{e()} |> rearrange({B} {N} (H Dh) -> {B} {N} (Dh H))")
        if k == "reduce":
            red = r.choice(["sum", "mean", "max", "min", "logsumexp"])
            return f"({e()} * tanh({red}({e()}, over=D)))"
        if k == "minmax":
            return self.pick(f"maximum({e()}, {e()})", f"minimum({e()}, {e()})", f"maximum({e()}, 0.1)",
                             f"minimum({e()}, {self.scalar('mul', s)})")
        if k == "where":
            return self.pick(f"where({e()} > {e()}, {e()}, {e()})", f"where({e()} < 0.0, {e()}, 0.5)",
                             f"masked_fill({e()}, {e()} > 1.0, 1.0)")
        if k == "dot":
            return self.pick(f"({e()} * tanh(einsum({e()}, {e()}: {B} {N} D, {B} {N} D -> {B} {N})))",
                             f"einsum({e()}, {e()}: {B} {N} D, {B} {N} D -> {B} {N} D)")
        if k == "repeat":
            return f"{e()} |> rearrange({B} {N} (H Dh) -> {B} {N} H Dh) |> mean(over=H) |> repeat({B} {N} Dh -> {B} {N} (H Dh))"
        if k == "to":
            return f"to(to({e()}, f64), f32)"
        if k == "linear":
            return self.pick(f"linear({e()}, {blk}.sq)", f"linear({e()}, {blk}.sq, {blk}.b1)",
                             f"({e()} @ {blk}.sq)", f"matmul({e()}, {blk}.sq)")
        if k == "mlp":
            act = r.choice(["silu", "gelu", "gelu_tanh", "relu"])
            if self.chance(0.5):
                return f"linear({act}(linear({e()}, {blk}.w_up)) * linear({e()}, {blk}.w_up), {blk}.w_down)"
            return f"{e()} |> linear({blk}.w_up) |> {act} |> linear({blk}.w_down)"
        if k == "matmul":
            return f"concat(linear({e()}, {blk}.half), linear({e()}, {blk}.half), over=E)"
        if k == "orders":  # operands whose axes stand in other orders, combined by name
            return self.pick(f"(({e()} |> rearrange({B} {N} D -> D {B} {N})) + {e()})",
                             f"(({e()} |> mean(over=D) |> rearrange({B} {N} -> {N} {B})) * {e()})",
                             f"(({e()} |> rearrange({B} {N} D -> {B} D {N}) |> softmax(over=D)) * {e()})",
                             f"(({e()} |> rearrange({B} {N} D -> {N} D {B}) |> log_softmax(over=D)) - {e()})")
        if k == "subset":  # masks and conditions over fewer axes
            return self.pick(f"where(mean({e()}, over=D) > 0.0, {e()}, {e()})",
                             f"masked_fill({e()}, mean({e()}, over=D) > 0.2, 0.5)",
                             f"where(sum({e()}, over=D) < 0.5, {e()}, -1.0)")
        if k == "total":  # a reduction over every axis: a tensor of shape []
            return self.pick(f"({e()} * tanh(sum({e()})))", f"({e()} - mean({e()}))", f"({e()} / (max(abs({e()})) + 1.0))")
        if k == "norm_inner":  # a norm over an axis that is not the last
            if self.chance(0.5):
                return (f"({e()} |> rearrange({B} {N} D -> {B} D {N}) |> rms_norm({blk}.n1, over=D, "
                        f"eps={self.scalar('eps', s)}) |> rearrange({B} D {N} -> {B} {N} D))")
            return (f"({e()} |> rearrange({B} {N} D -> D {B} {N}) |> layer_norm({blk}.n1, {blk}.b1, over=D, "
                    f"eps={self.scalar('eps', s)}) |> rearrange(D {B} {N} -> {B} {N} D))")
        if k == "logic":  # masks combined with and / or / not
            return self.pick(f"masked_fill({e()}, ({e()} > 0.0) and ({e()} < 1.0), 0.0)",
                             f"where(({e()} < -0.5) or not ({e()} < 0.5), {e()}, {e()})",
                             f"masked_fill({e()}, !({e()} > -1.0), -1.0)")
        if k == "power":
            return self.pick(f"(abs({e()}) ** 0.5)", f"({e()} ** 2)", f"(-{e()})", f"scale({e()}, mean({e()}, over=D))",
                             f"(2.0 ** tanh({e()}))")
        if k == "mix_n":  # attention without heads: axes renamed by einsum, matmul with batch axes
            x1, x2 = e(), e()
            return self.pick(
                f"(einsum({x1}, {x2}: {B} {N} D, {B} m D -> {B} {N} m) |> masked_fill(!causal[{N} m], -inf) "
                f"|> softmax(over=m) |> matmul({x2} |> rearrange({B} {N} D -> {B} {N} D)))",
                f"((einsum({x1}, {x2}: {B} {N} D, {B} m D -> {B} {N} m) |> scale(0.1) |> softmax(over=m)) @ {x2})",
                f"(einsum({x1}, {x2}: {B} {N} D, {B} m D -> {B} m {N}) |> log_softmax(over={N}) |> exp "
                f"|> einsum({x1}: {B} m {N}, {B} m D -> {B} {N} D))")
        if k == "pool":  # a helper whose result has fewer axes, broadcast back by name
            return f"({e()} * pooled({e()}))"
        if k == "shift":  # integer arithmetic on positions
            return f"({e()} |> rearrange({B} {N} (H Dh) -> {B} H {N} Dh) |> rope(arange({N}) + 1, theta=50.0) " \
                   f"|> rearrange({B} H {N} Dh -> {B} {N} (H Dh)))"
        if k == "argmax":  # ids computed from values: a row of the table per position
            # values that can't tie (a tie's argmax is any of them): through a weight, plus a bias
            return f"embedding(argmax(linear({e()}, {blk}.sq) + {blk}.b1, over=D), {blk}.sq)"
        if k == "experts":  # a mixture of experts (the helper `experts`, one routing per program)
            return f"experts({blk}, {e()})"
        if k == "take":  # rows picked by a computed index, as embedding does
            return f"take({blk}.sq, argmax(linear({e()}, {blk}.sq) + {blk}.b1, over=D), over=D)"
        if k == "bias":
            return self.pick(f"({e()} + {blk}.b1)", f"({blk}.b1 * {e()})")
        if k == "einsum_w":
            return f"einsum({e()}, {blk}.n1: {B} {N} D, D -> {B} {N} D)"
        if k == "over_n":
            red = r.choice(["sum", "mean", "max", "min", "logsumexp"])
            return self.pick(f"({e()} - {red}({e()}, over={N}))", f"({e()} * tanh(mean({e()}, over=({N}, D))))")
        if k == "softmax_n":
            return self.pick(f"softmax({e()}, over={N})", f"log_softmax({e()}, over={N})")
        if k == "call":
            g = r.choice(callable_fns)
            args = []
            if g.model:
                if not blk:
                    return r.choice(env)
                args.append(blk)
            x = e()
            how = r.random()
            rest = [self.scalar("mul", s)] if g.scalar and not (g.default and how < 0.3) else []
            if how > 0.85 and not g.model:  # piped: `x |> f(…)`
                call = f"({x} |> {g.name}({', '.join(rest)}))"
            elif how >= 0.6 and rest:  # by keyword, out of order
                call = f"{g.name}({', '.join(args + [f's={rest[0]}', f'x={x}'])})"
            else:
                call = f"{g.name}({', '.join(args + [x] + rest)})"
            if g.ret == "Dh":  # a helper over heads
                return f"{call} |> repeat({B} {N} Dh -> {B} {N} (H Dh))"
            return call
        raise AssertionError(k)

    # ------------------------------------------------------------ statements
    def body(self, f: Fn, env: list, blk, n_stmts: int, ret_expr=None) -> list:
        out = []
        env = list(env)
        for k in range(n_stmts):
            if self.chance(0.15):
                a, c = f"a{k}", f"c{k}"
                out.append(f"{a}, {c} = {self.expr(env, f, 2, blk)} |> split({f.b} {f.n} (2 E) -> {f.b} {f.n} E)")
                name = self.pick(*[v for v in env if not v.startswith("_")]) if self.chance(0.5) else f"h{k}"
                out.append(f"{name} = concat({c}, {a}, over=E)")
            else:
                name = self.pick(*env) if self.chance(0.4) else f"h{k}"
                out.append(f"{name} = {self.expr(env, f, 3, blk)}")
            if name not in env:
                env.append(name)
        out.append(f"return {ret_expr or self.expr(env, f, 2, blk)}")
        return out

    def attention(self, f: Fn, a: str, x: str, pos: str | None, s: str | None) -> list:
        """Statements computing attention over `x` with the submodel `a`; the last is `o = ...`."""
        B, N = f.b, f.n
        lines = []
        v03 = self.r3.choice(ROPE_V03) + self.r3.choice(["", "", ", rotary_dims=2", ", rotary_dims=Dh"]) \
            if self.v03 else ""
        for name, heads in (("q", "H"), ("k", "Hkv"), ("v", "Hkv")):
            line = f"{name} = linear({x}, {a}.w{name}) |> rearrange({B} {N} ({heads} Dh) -> {B} {heads} {N} Dh)"
            if name != "v" and pos is not None and self.chance(0.8):
                theta = self.scalar("theta", s)
                style = self.pick("", "", ', style="interleaved"', ', style="half"')
                line += f" |> rope({pos}, theta={theta}{style}{v03})"
            lines.append(line)
        if self.lm or self.chance(0.5):  # a language model's attention repeats fewer key heads itself
            lines.append(f"k = k |> repeat({B} Hkv {N} Dh -> {B} (Hkv G) {N} Dh)")
            lines.append(f"v = v |> repeat({B} Hkv {N} Dh -> {B} (Hkv G) {N} Dh)")
            if not self.lm and self.chance(0.5):  # attention written out, as einsums around a softmax
                lines.append(f"att = einsum(q, k: {B} H {N} Dh, {B} H m Dh -> {B} H {N} m) "
                             f"|> scale({self.scalar('scale', s)}) |> masked_fill(!causal[{N} m], -inf) "
                             f"|> softmax(over=m)")
                lines.append(f"o = einsum(att, v: {B} H {N} m, {B} H m Dh -> {B} H {N} Dh)")
                return lines + [f"o = o |> rearrange({B} H {N} Dh -> {B} {N} (H Dh)) |> linear({a}.wo)"]
        scale = f", scale={self.scalar('scale', s)}" if self.chance(0.6) else ""
        cap = self.r3.choice(["", "", "", ", softcap=3.0", ", softcap=Dh"]) if self.v03 else ""  # v0.3
        cap += f", sinks={a}.sinks" if self.sinks else ""
        lines.append(f"o = scaled_dot_product_attention(q, k, v, attn_mask=causal[{N} {N}]{scale}{cap})")
        lines.append(f"o = o |> rearrange({B} H {N} Dh -> {B} {N} (H Dh)) |> linear({a}.wo)")
        return lines

    def experts(self) -> str:
        """`fn experts`: a mixture of X experts, K per token, routed as Mixtral, Qwen3-MoE
        (with or without the renormalisation) or gpt-oss (a router bias, softmax after)."""
        r = self.r33
        route = r.choice(["mixtral", "qwen3", "qwen3_raw", "gptoss"])
        if route == "mixtral":
            lines = ["w, e = linear(x, p.router) |> topk(k=K, over=X)", "w = softmax(w, over=K)"]
        elif route == "gptoss":
            lines = ["w, e = linear(x, p.router, p.rbias) |> topk(k=K, over=X)", "w = softmax(w, over=K)"]
        else:
            lines = ["w, e = linear(x, p.router) |> softmax(over=X) |> topk(k=K, over=X)"]
            if route == "qwen3":
                lines.append("w = w / sum(w, over=K)")
        act = r.choice(["silu(g) * u", "gelu(g) * u", "relu(g)"])
        lines += ["g = einsum(x, take(p.ex_gate, e, over=X): b n D, b n K F D -> b n K F)",
                  "u = einsum(x, take(p.ex_up, e, over=X): b n D, b n K F D -> b n K F)",
                  f"y = einsum({act}, take(p.ex_down, e, over=X): b n K F, b n K D F -> b n K D)",
                  "return sum(y * w, over=K)"]
        return "\n".join(["fn experts(p: Block, x: [b n D]) -> [b n D]:"] + ["    " + x for x in lines])

    # ------------------------------------------------------------ the program
    def program(self) -> Case:
        r = self.r
        D = r.choice([8, 12, 16])
        hkv = r.choice([1, 2])
        L = r.choice([1, 2])
        dims = [f"dim V = {r.choice([16, 24])}", f"dim D = {D}", "dim H = 2", f"dim Hkv = {hkv}", "dim G = H / Hkv",
                "dim Dh = D / H", f"dim F = {r.choice([8, 20])}", "dim E = D / 2", f"dim L = {L}"]
        models = """
model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    n1: [D] = ones
    b1: [D] = zeros
    attn: Attn
    sq: [D D]
    half: [E D]
    w_up: [F D]
    w_down: [D F]

model Root:
    embed: [V D]
    onehot: [D V]
    layers: [L] Block
    norm: [D] = ones
    top: Block
    lm_head: [V D]
""".strip("\n")
        if self.moe:
            dims += ["dim X = 4", "dim K = 2"]
            models = models.replace("    w_down: [D F]\n", "    w_down: [D F]\n    router: [X D]\n    rbias: [X]\n"
                                    "    ex_gate: [X F D]\n    ex_up: [X F D]\n    ex_down: [X D F]\n")
        if self.sinks:
            models = models.replace("    wo: [D H*Dh]\n", "    wo: [D H*Dh]\n    sinks: [H]\n")
        # helpers: generic over their size variables, some on a Block, some with a scalar
        helpers = [self.experts()] if self.moe else []
        n_helpers = r.choice([0, 1, 2, 3])
        for i in range(n_helpers):
            b, n = r.choice([("b", "n"), ("p", "q"), ("bb", "t")])
            self.fns.append(Fn(f"f{i}", b, n, model="Block" if self.chance(0.4) else None, scalar=self.chance(0.7),
                               ret="Dh" if self.chance(0.15) else "D"))
            self.fns[-1].default = self.fns[-1].scalar and self.chance(0.3)
        for f in self.fns:
            params = ([f"blk: Block"] if f.model else []) + [f"x: [{f.b} {f.n} D]"] + \
                ([f"s: [] = {self.scalar('mul', None)}" if f.default else "s: []"] if f.scalar else [])
            if f.ret == "Dh":
                head = f"fn {f.name}({', '.join(params)}) -> [{f.b} {f.n} Dh]:"
                body = self.body(f, ["x"], "blk" if f.model else None, r.choice([0, 1, 2]),
                                 ret_expr=f"{self.expr(['x'], f, 2, 'blk' if f.model else None)} "
                                          f"|> rearrange({f.b} {f.n} (H Dh) -> {f.b} {f.n} H Dh) |> sum(over=H)")
            else:
                head = f"fn {f.name}({', '.join(params)}) -> [{f.b} {f.n} D]:"
                body = self.body(f, ["x"], "blk" if f.model else None, r.choice([0, 1, 2]))
            helpers.append("\n".join([head] + ["    " + line for line in body]))
        # the block: attention and an MLP-ish update, with a scalar parameter
        blk_f = Fn("block", "b", "n", model="Block", scalar=True)
        self.fns.insert(0, blk_f)  # the block may call every helper
        pos = "pos"
        blines = [f"h = {self.expr(['x'], blk_f, 2, 'p')}"]
        blines += self.attention(blk_f, "p.attn", "h", pos, "s")
        blines.append("x = x + o")
        if self.moe:  # the block's feed-forward as a mixture (Mixtral's place for it)
            blines.append(f"x = x + experts(p, rms_norm(x, p.n1, over=D))")
        blines += self.body(blk_f, ["x", "h", "o"], "p", r.choice([1, 2]))[:-1]
        blines.append(f"return x + {self.expr(['x'], blk_f, 2, 'p')}")
        block = "\n".join(["fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:"]
                          + ["    " + line for line in blines])
        self.fns.remove(blk_f)
        fwd = Fn("forward", "b", "n", scalar=not self.lm and self.chance(0.5))
        self.fns.insert(0, fwd)
        call_s = self.scalar("mul", "s" if fwd.scalar else None)
        if self.lm:
            head = "fn forward(m: Root, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:"
            flines = ["x = embedding(ids, m.embed)"]
            flines += [f"x = {self.expr(['x'], fwd, 2, 'm.top')}"] if self.chance(0.5) else []
            flines += ["for layer in m.layers:", f"    x = block(layer, x, pos, {call_s})"]
            flines.append(f"return rms_norm(x, m.norm, over=D, eps={self.scalar('eps', None)}) |> linear(m.lm_head)")
            decorator = "@export(hf)" if self.sinks else "@export(hf, vllm)"  # vLLM runs no sinks (E3319)
        else:
            head = "fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64" + \
                (", s: []" if fwd.scalar else "") + ") -> [b n D]:"
            flines = [self.pick("x = x + embedding(ids, m.embed)", "x = x + linear(one_hot(ids), m.onehot)", "x = x")]
            if self.chance(0.3):
                flines.append("x = x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(arange(n), theta=100.0) "
                              "|> rearrange(b H n Dh -> b n (H Dh))")
            flines += ["for layer in m.layers:", f"    x = block(layer, x, pos, {call_s})"]
            flines += self.body(fwd, ["x"], "m.top", r.choice([0, 1, 2]))
            decorator = "@export(hf)"
        self.fns.remove(fwd)
        forward = "\n".join([decorator, head] + ["    " + line for line in flines])
        if "pooled(" in block + forward + "".join(helpers):
            helpers.append("fn pooled(x: [pb pn D]) -> [pb D]:\n    h: [pb pn D] = tanh(x)\n"
                           "    return mean(h, over=pn) |> rms_norm(ones_d(), over=D)")
            helpers.append("fn ones_d() -> [D]:\n    return sum(causal[D D] |> to(f32) |> rearrange(D e -> D e), over=e) / D")
        source = "\n".join(dims) + "\n\n" + models + "\n\n" + "\n\n".join(helpers + [block, forward]) + "\n"
        case = Case(source, lm=self.lm, seed=self.r.randrange(1 << 16))
        case.plain_scalar = fwd.scalar
        return case


def generate(seed: int, v03: bool = True) -> Case:
    """The program of a seed: even seeds language models, odd ones plain functions
    (`v03=False`: without v0.3's features, as the generator made it before them)."""
    return Gen(seed, seed % 2 == 0, v03).program()


# ---------------------------------------------------------------- llama-shaped programs (--gguf)
# v0.3 ropes llama.cpp runs (arch/rope_gguf.py): yarn with llama.cpp's betas, its attention
# factor its own (1 + 0.1 ln 4) or another
GGUF_ROPE_V03 = ["", "", ', scaling="linear", factor=2.0',
                 ', scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16',
                 ', scaling="yarn", factor=4.0, original_positions=8, beta_fast=32.0, beta_slow=1.0, '
                 'attention_factor=1.2',
                 ', scaling="yarn", factor=4.0, original_positions=8, beta_fast=32.0, beta_slow=1.0, '
                 'attention_factor=1.1386294361119891']


def llama_case(seed: int, v03: bool = True, rope: str | None = None) -> Case:
    """A llama written one of many ways that llama.cpp's llama runs: its scalar keywords
    (eps, theta, scale) from literals, dims, parameters passed down and arithmetic, rope
    in halves or pairs, the output layer tied or not, the block split into helpers; v0.3's
    rope scaling and rotary_dims from a generator of their own (`v03=False`: the llamas
    made before them; `rope`: these keywords instead)."""
    r = random.Random(seed)
    r3 = random.Random(seed + 1_000_003)
    if rope is None:
        rope = r3.choice(GGUF_ROPE_V03) + r3.choice(["", ", rotary_dims=Dh"]) if v03 else ""  # llama.cpp's llama
        # rotates every feature (partial rotary: tests/test_gguf_v03.py, as qwen2)
    c = r.choice
    eps_value, theta_value = c([(1e-5, "1e-5"), (1e-6, "1e-6")]), c([10000.0, 500000.0, 1000.0])
    eps_text = c([eps_value[1], "e", "e" if eps_value[0] == 1e-5 else eps_value[1]])
    theta_text = c([repr(theta_value), "t", "t * 1", f"Dh * {theta_value / 16!r}"])
    scale = c(["", ", scale=1 / sqrt(Dh)", ", scale=sc", ", scale=Dh ** -0.5"])
    style = c(["", ', style="half"', ', style="interleaved"'])
    tied = r.random() < 0.3
    lines = ["dim V = 256", "dim D = 64", "dim H = 4", f"dim Hkv = {c([1, 2, 4])}", "dim G = H / Hkv",
             "dim Dh = D / H", "dim F = 96", f"dim L = {c([1, 2])}", "",
             "model Attention:", "    wq: [H*Dh D]", "    wk: [Hkv*Dh D]", "    wv: [Hkv*Dh D]", "    wo: [D H*Dh]", "",
             "model Block:", "    attn_norm: [D] = ones", "    attn: Attention", "    mlp_norm: [D] = ones",
             "    w_gate: [F D]", "    w_up: [F D]", "    w_down: [D F]", "",
             "model Llama:", "    embed: [V D]", "    layers: [L] Block", "    norm: [D] = ones"]
    lines += [] if tied else ["    lm_head: [V D]"]
    lines += ["", "fn normed(x: [b n D], w: [D], e: []) -> [b n D]:", f"    return rms_norm(x, w, over=D, eps={eps_text})", ""]
    lines += ["fn attention(a: Attention, x: [b n D], pos: [b n] i64, t: [], sc: []) -> [b n D]:",
              f"    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta={theta_text}{style}{rope})",
              f"    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta={theta_text}{style}{rope})",
              "    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)",
              "    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)",
              "    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)",
              f"    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]{scale})",
              "    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)", ""]
    mlp = c(["(silu(linear(h, p.w_gate)) * linear(h, p.w_up))", "(linear(h, p.w_up) * silu(linear(h, p.w_gate)))"])
    e_arg = c([repr(eps_value[0]), "eps", "eps * 1"])
    t_arg = c([repr(theta_value), f"{theta_value / 1000!r} * 1000"])
    sc_arg = c(["1 / sqrt(Dh)", "Dh ** -0.5"])
    lines += ["fn block(p: Block, x: [b n D], pos: [b n] i64, eps: []) -> [b n D]:",
              f"    x = x + attention(p.attn, normed(x, p.attn_norm, {e_arg}), pos, {t_arg}, {sc_arg})",
              f"    h = normed(x, p.mlp_norm, {e_arg})",
              f"    return x + linear({mlp}, p.w_down)", ""]
    head = "m.embed" if tied else "m.lm_head"
    lines += ["@export(gguf)", "fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:",
              "    x = embedding(ids, m.embed)", "    for layer in m.layers:",
              f"        x = block(layer, x, pos, {eps_value[0]!r})",
              f"    return normed(x, m.norm, {eps_value[0]!r}) |> linear({head})", ""]
    return Case("\n".join(lines), lm=True, seed=r.randrange(1 << 16))
