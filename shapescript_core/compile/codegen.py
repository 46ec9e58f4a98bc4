"""PyTorch source from the op graph: one nn.Module per model, one method per function.

Every statement of the source becomes one statement of Python, preceded by a comment
naming its source line. Each builtin's lowering is a function its row of the builtin
table names (`check/builtins.py`, `check/builtin_lowering.py`); `MethodGen` is the
`Emitter` it is called with, giving it the operands' code and the positions computed
from their types (`layout.py`).

Two flavours share everything but attention, the embedding and the output layer:
- plain: attention is `torch.nn.functional.scaled_dot_product_attention`;
- language model (the Hugging Face decoder layout): each attention goes through
  `ALL_ATTENTION_FUNCTIONS` with keys and values at their own head count and a KV cache,
  the token embedding is the base model's `nn.Embedding`, and the output layer is the
  `lm_head` of the causal-LM class (`hf/modeling.py` writes those classes). In the
  Hugging Face flavour, a model whose rotary positions are one table (`rotary_plan.py`)
  computes it once, in the base model's `rotary_emb`, and each rope rotates by the
  `position_embeddings` its method receives (with the mask and the cache).
"""
from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Optional

from ..check.builtins import BUILTINS
from ..check.sizes import Size
from ..check.types import ModelT, ScalarT, StackT, TensorT, TupleT
from ..dtypes import TABLE, torch_name
from ..escape import py_comment, py_str
from .expert_parallel import ExpertSplits, expert_splits
from .experts import expert_einsum
from .graph import Bind, CompileError, Loop, Ret, trace_program
from .layout import PatternLowering, align, dims_arg, match_positions, permute_code, positions
from .names import Scope, py_ident
from .parallel_plan import ParallelPlan, plan_parallel
from .plan import Plan, attr_name, models_in_order, py_name, walk_nodes
from .prelude import HELPERS
from .rotary_plan import Rotary, rotary_plan
from .windows import rope_parameters, window_plan

TORCH_DTYPES = {d.name: torch_name(d.name) for d in TABLE if d.language}
OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "eq": "==", "ne": "!=",
             "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|", "floordiv": "//", "mod": "%"}
ATTENTION_KWARGS = "attention_mask=attention_mask, past_key_values=past_key_values, **kwargs"


def atom(code: str) -> str:
    """code, parenthesized unless it is already one primary expression."""
    depth, quote = 0, None
    for ch in code:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in " +-*/@<>=!&|~%":
            return f"({code})"
    return code


# Python's binding of the operators the generated code writes (higher binds tighter);
# `&` and `|` bind tighter than comparisons, so a comparison under them keeps its parentheses
PRECEDENCE = {"==": 1, "!=": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "|": 2, "&": 3,
              "+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5, "@": 5, "**": 7}
UNARY = 6


def loosest(code: str) -> Optional[int]:
    """The precedence of code's loosest top-level operator (binary operators are written
    ` op `), UNARY for `-x` / `~x`, None for one primary expression, 0 for anything else."""
    depth, quote, best = 0, None, None
    i = 0
    while i < len(code):
        ch = code[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == " ":
            end = code.find(" ", i + 1)
            p = PRECEDENCE.get(code[i + 1:end]) if end > 0 else None
            if p is None:
                return 0
            best = p if best is None else min(best, p)
            i = end
        i += 1
    if best is None and code[:1] in "-~":
        return UNARY
    return best


def operand(code: str, op: str, right: bool) -> str:
    """code as the left or right operand of the binary `op`, parenthesized only where
    Python would bind it otherwise (the right side of the same precedence, and chained
    comparisons and `**`, keep theirs, so the order of evaluation is the source's)."""
    p, q = loosest(code), PRECEDENCE[op]
    if p is None or p > q or (p == q and not right and q not in (1, 7)):
        return code
    return f"({code})"


class ClassInfo:
    def __init__(self, model: str, name: str):
        self.model = model
        self.name = name
        self.methods: dict = {}  # fn name -> method name
        self.sites: list = []  # attention nodes in this class's methods (language model)
        self.site_attrs: dict = {}  # id(attention node) -> the CausalAttention attribute
        self.order: list = []  # fn names in the order they were reached


class Generator:
    def __init__(self, prog, plan: Plan, class_names: dict, flavor: str = "hf", fused: Optional[dict] = None):
        self.flavor = flavor  # "hf" (transformers) or "vllm" (a native vLLM model)
        # the native vLLM model's functions run as its fused mixture of experts (arch/fused_experts.py)
        self.fused = dict(fused or {}) if flavor == "vllm" else {}
        self.fused_fields = {(f.model, n): f for f in self.fused.values() for n in (f.gate, f.up, f.down)}
        self.prog = prog
        self.plan = plan
        self.lm = plan.lm
        self.env = prog.env
        self.helpers: set = set()
        self.classes: dict = {m: ClassInfo(m, class_names[m]) for m in models_in_order(prog, plan.root)}
        self.dim_names = self._dim_names()
        self._params: dict = {}  # fn name -> {param: Python name}
        self._site_scales = None  # id(attention call) -> the scales its traced calls fold to
        self._attention_runs: dict = {}  # (id(attention call), model path) -> runs per forward
        self._trace = None  # the export's trace, once made
        self._assign_methods()
        self.windows = None  # the layers' sliding windows (windows.py), for a language model
        self.rope_parameters = None  # config.json's rope_parameters, where one theta per layer type
        # the model's one rotary table (Hugging Face flavour), or why it has none
        self.rotary_plan: object = "not a language model exported for transformers"
        if self.lm:
            self.check_attention_runs()
            self.windows = window_plan(self, self._trace)
            self.rope_parameters = rope_parameters(self, self._trace, self.windows)
            if flavor == "hf":
                self.rotary_plan = rotary_plan(self._trace, self.lm.positions, self.head_dim())
        self.rotary: Optional[Rotary] = self.rotary_plan if isinstance(self.rotary_plan, Rotary) else None
        if self.rotary is not None and self.rope_parameters is None:  # the table's one theta is the model's
            self.rope_parameters = self.rotary.rope_parameters()
        self.attention_fns = self._attention_fns() if self.lm else set()
        # how ranks split it (tensor and pipeline parallelism): read by the config's plans,
        # the head counts of reshapes and the pipeline stages of the base model's forward
        self.parallel = plan_parallel(prog, plan, self.attention_count) if self.lm else ParallelPlan()
        # the native vLLM model's experts, each rank holding a share of every expert's width
        self.experts = expert_splits(prog, set(self.fused_fields)) if self.lm and flavor == "vllm" else ExpertSplits()

    # ------------------------------------------------------------ naming
    def _dim_names(self) -> dict:
        """Each dim's module constant: a Python name of its own, none of a class."""
        scope = Scope(c.name for c in self.classes.values())
        return {name: scope(name) for name in self.prog.dims}

    def param_names(self, g) -> dict:
        """The Python names of a function's parameters (its method's, and its callers'
        keywords): one scope, none a dim's constant."""
        names = self._params.get(g.name)
        if names is None:
            scope = Scope(self.dim_names.values())
            names = self._params[g.name] = {p: scope(p) for p, _, _ in g.params}
        return names

    def local_name(self, name: str) -> str:
        """A parameter's or local's Python name: not a reserved name, nor a dim's constant
        (a local `H` would hide the `H` of `x.reshape(b, n, H, Dh)`)."""
        return py_ident(name, self.dim_names.values())

    def dim_constants(self) -> list:
        lines = []
        for name, value in self.prog.dims.items():
            if value is None:
                continue
            lines.append(f"{self.dim_names[name]} = {value}")
        return lines

    def _attention_fns(self) -> set:
        """Functions that reach an attention (or a rope, when the ropes rotate by the model's
        rotary table): they pass the mask, the cache and kwargs on."""
        direct, calls = set(), {}
        for name, g in self.prog.fns.items():
            order, _ = walk_nodes(g.body)
            for n in order:
                if n.op == "scaled_dot_product_attention" or (n.op == "rope" and self.rotary is not None):
                    direct.add(name)
                elif n.op == "call":
                    calls.setdefault(name, set()).add(n.attrs["fn"])
        out = set(direct)
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name not in out and callees & out:
                    out.add(name)
                    changed = True
        return out

    def _assign_methods(self):
        """Which class holds which function: a function taking a model first is that model's
        method; any other function is a method of every class that calls it."""
        entry = self.prog.entry
        work = [(entry.name, self.plan.root)]
        while work:
            fn, model = work.pop(0)
            cls = self.classes[model]
            if fn in cls.methods:
                continue
            g = self.prog.fns[fn]
            taken = {fp.attr for (m, _), fp in self.plan.fields.items() if m == model}
            used = taken | set(cls.methods.values())
            if fn == entry.name and model == self.plan.root:
                mname = "forward"
            elif model != self.plan.root and not cls.methods and "forward" not in used and \
                    self._takes_model(g, model):
                # a model's first function is its module's forward, called as `module(...)`:
                # engines replace or skip modules by calling them (vLLM's fusers trace the
                # forward, its pipeline stages put a PPMissingLayer where a layer isn't theirs)
                mname = "forward"
            else:
                mname = attr_name(fn, used)
            cls.methods[fn] = mname
            cls.order.append(fn)
            order, _ = walk_nodes(g.body)
            for n in order:
                if n.op == "call":
                    callee = self.prog.fns[n.attrs["fn"]]
                    first = callee.params[0][1] if callee.params else None
                    work.append((n.attrs["fn"], first.name if isinstance(first, ModelT) else model))
                elif n.op == "scaled_dot_product_attention" and self.lm:
                    if not any(s is n for s in cls.sites):
                        cls.sites.append(n)
        for cls in self.classes.values():
            taken = {fp.attr for (m, _), fp in self.plan.fields.items() if m == cls.model} | set(cls.methods.values())
            for k, site in enumerate(cls.sites):
                name = "attention" if len(cls.sites) == 1 else f"attention_{k}"
                if name in taken:
                    name += "_core"
                while name in taken:
                    name += "_"
                taken.add(name)
                cls.site_attrs[id(site)] = name

    @staticmethod
    def _takes_model(g, model: str) -> bool:
        first = g.params[0][1] if g.params else None
        return isinstance(first, ModelT) and first.name == model

    # ------------------------------------------------------------ attention scales
    def site_scale(self, n):
        """The scale an attention call writes, as one number known at export, or None
        when it writes none, or when its calls compute different values or
        values known only at run time (the export's trace folds them: `graph.fold`)."""
        if self.arg_scale(n) is None:
            return None
        self._trace_sites()
        values = self._site_scales.get(id(n.ast), {None})
        if len(values) != 1 or None in values:
            return None
        return float(next(iter(values)))

    def trace_nodes(self) -> list:
        """Every node the export's trace runs (the trace made once per export)."""
        self._trace_sites()
        return self._trace.nodes

    def site_softcap(self, n):
        """An attention call's `softcap=` as one number known at export (v0.3), or None when
        it has none; CompileError when its calls fold to different values or to values
        known only at run time: an attention module holds one."""
        if n.attrs["args"].get("softcap") is None:
            return None
        self._trace_sites()
        values = self._site_softcaps.get(id(n.ast), {None})
        if len(values) != 1 or None in values:
            raise CompileError(f"the softcap of the attention at line {n.where[1]} is not one number known at "
                               f"export; write it with literals and dims, or pass the same value at every call",
                               n.where)
        return float(next(iter(values)))

    def _trace_sites(self):
        """What the export's trace says of each attention call (once per export)."""
        if self._site_scales is not None:
            return
        self._site_scales, self._site_softcaps = {}, {}
        tr = self._trace = trace_program(self.prog)
        for t in tr.nodes:
            if t.op == "scaled_dot_product_attention":
                self._site_scales.setdefault(id(t.ast), set()).add(t.attrs.get("scale"))
                self._site_softcaps.setdefault(id(t.ast), set()).add(t.attrs.get("softcap"))
        self._attention_runs = tr.attention_runs

    def check_attention_runs(self):
        """A language model's attention modules each hold one slot of the KV cache, so
        each may run once per forward: an attention that runs twice on one model (its
        function called twice on it, a loop over a stack inside another loop) would
        write its slot twice, and generation with the cache would compute another model."""
        self._trace_sites()
        for (site, owner), count in self._attention_runs.items():
            if count > 1:
                n = next(x for g in self.prog.fns.values() for x in walk_nodes(g.body)[0]
                         if x.op == "scaled_dot_product_attention" and id(x.ast) == site)
                where = f"`{owner}`" if owner else "the model"
                raise CompileError(f"the attention at line {n.where[1]} runs {count} times on {where} in one "
                                   f"forward, but a language model's KV cache holds one slot per attention: "
                                   f"call it once per model (a stack's layers each once)", n.where)

    def head_dim(self) -> Optional[int]:
        """A language model's head width: its first attention's query width."""
        site = next((c.sites[0] for c in self.classes.values() if c.sites), None)
        if site is None:
            return None
        return self.prog.value_of(site.attrs["args"]["q"].type.axes[-1].size)

    @staticmethod
    def arg_scale(n):
        return n.attrs["args"].get("scale")

    # ------------------------------------------------------------ attention layer indices
    def attention_count(self, model: str) -> int:
        cls = self.classes[model]
        n = len(cls.sites)
        for fname, f in self.prog.model(model).fields.items():
            if isinstance(f.type, ModelT):
                n += self.attention_count(f.type.name)
            elif isinstance(f.type, StackT):
                n += self.prog.value_of(f.type.count) * self.attention_count(f.type.model)
        return n

    # ------------------------------------------------------------ sizes
    def size_code(self, s: Size, svars: Optional[dict] = None) -> Optional[str]:
        """A size as Python: a dim's name where it is one, else arithmetic of dims' values
        and the runtime sizes in `svars` (size variable -> Python name)."""
        name = self.env.dims.name_of(s)
        if name is not None and name in self.dim_names and self.prog.dims.get(name) is not None:
            return self.dim_names[name]
        v = self.prog.value_of(s)
        if v is not None:
            return str(v)
        parts = []
        for mono, c in s.terms:
            coeff = Fraction(c)
            syms = []
            for sym, e in mono:
                val = self.prog.dims.get(sym)
                if val is not None:
                    coeff *= Fraction(val) ** e
                elif svars is not None and sym in svars and e > 0:
                    syms.extend([svars[sym]] * e)
                else:
                    return None
            if coeff.denominator != 1:
                return None
            factors = ([str(coeff.numerator)] if coeff != 1 or not syms else []) + syms
            parts.append(" * ".join(factors))
        return " + ".join(parts) if parts else "0"


class MethodGen:
    """One function as a method of one class."""

    def __init__(self, gen: Generator, g, cls: ClassInfo):
        self.gen = gen
        self.g = g
        self.cls = cls
        self.lm = gen.lm
        self.is_entry = g is gen.prog.entry
        self.lm_entry = self.is_entry and self.lm is not None
        self.vars: dict = {}
        self.used_svars: dict = {}  # size variable -> python name
        self.svar_names: dict = {}
        self.depth = 0  # nesting of the expression being generated
        self.pending: list = []  # temporaries a deep expression needs, written before its statement
        self.temps = 0
        self.attention = gen.plan.attention  # groups and key/value sources, decided by the plan
        self.vars.update(gen.param_names(g))
        bound = {n for s in _all_binds(g.body) for n in s.targets}
        bound |= set(_loop_vars(g.body))
        scope = Scope(set(gen.dim_names.values()) | set(self.vars.values()))
        for p in sorted(bound - set(self.vars)):  # one Python name per source name, none shared
            self.vars[p] = scope(p)
        self.local_names = set(self.vars.values())
        if self.lm_entry:
            self.vars[self.lm.ids] = "input_ids"
            if self.lm.positions:
                self.vars[self.lm.positions] = "position_ids"
        if g.model_param:
            self.vars[g.model_param] = "self"
        self.device = self._device()

    # ------------------------------------------------------------ helpers
    def var(self, name: str) -> str:
        return self.vars.get(name) or self.gen.local_name(name)

    def svar(self, name: str) -> str:
        if name not in self.svar_names:
            n = py_name(name)
            taken = self.local_names | set(self.vars.values()) | set(self.svar_names.values())
            if n in taken:
                n = py_ident(f"{n}_size", taken)
            self.svar_names[name] = n
        return self.svar_names[name]

    def size(self, s: Size) -> Optional[str]:
        svars = {}
        for sym in s.symbols():
            if self.gen.prog.dims.get(sym) is None:
                svars[sym] = self.svar(sym)
        code = self.gen.size_code(s, svars)
        if code is not None:
            for sym in svars:
                if svars[sym] in code:
                    self.used_svars[sym] = svars[sym]
        return code

    def need_size(self, s: Size, where) -> str:
        c = self.size(s)
        if c is None:
            raise CompileError("can't compute a size at run time", where)
        return c

    def _device(self) -> str:
        for p, t, _ in self.g.params:
            if isinstance(t, TensorT):
                return f"{self.var(p)}.device" if not (self.lm_entry and p == self.lm.ids) else "inputs_embeds.device"
        return "None"

    def svar_bindings(self) -> list:
        lines = []
        for sym, pyname in self.used_svars.items():
            src = self._axis_holding(sym)
            if src is None:
                raise CompileError(f"the size `{sym}` is not known at run time", (self.g.path, self.g.item and 0))
            p, i, factor = src
            holder = "inputs_embeds" if self.lm_entry and p == self.lm.ids else self.var(p)
            lines.append(f"{pyname} = {holder}.shape[{i}]" + (f" // {factor}" if factor != 1 else ""))
        return lines

    def _axis_holding(self, sym: str):
        """(parameter, axis, k) of a parameter's axis of size k * sym (k from the dims),
        an axis of size exactly sym first."""
        found = None
        values = self.gen.env.dims.values
        for p, t, _ in self.g.params:
            if not isinstance(t, TensorT):
                continue
            for i, a in enumerate(t.axes):
                if a.size.single_symbol() == sym:
                    return p, i, 1
                if found is None and a.size.is_monomial() and dict(a.size.terms[0][0]).get(sym) == 1:
                    k = a.size.evaluate({**values, sym: 1})
                    if k is not None and k.denominator == 1 and k > 0:
                        found = (p, i, int(k))
        return found

    # ------------------------------------------------------------ statements
    def body(self) -> list:
        if self.lm_entry:
            lines = self.stages()
        else:
            lines = self.stmts(self.g.body)
        return self.svar_bindings() + lines

    # ------------------------------------------------------------ pipeline stages
    def stages(self) -> list:
        """A language model's forward as pipeline stages (parallel_plan.py): vLLM gives each
        stage a range of the layers and puts a PPMissingLayer (an nn.Identity) for the
        others; the first stage runs what comes before the loop over the layers, the last
        what comes after it, the others take and return the hidden states."""
        body = self.g.body
        pipe = self.gen.parallel.pipeline
        if self.gen.flavor == "vllm":  # the native model: vLLM's stages (the ForCausalLM refuses others)
            if pipe is None:
                return self.stmts(body)
            i = next(k for k, s in enumerate(body) if s is pipe.loop)
            x = self.var(pipe.carried)
            lines = ["if get_pp_group().is_first_rank:"]
            lines += ["    " + line for line in (self.stmts(body[:i]) or ["pass"])]
            lines += ["else:", f"    {x} = inputs_embeds  # the hidden states of the stage before"]
            lines += self.stmts([pipe.loop])
            lines += ["if not get_pp_group().is_last_rank:  # the hidden states, for the stage after",
                      f'    return IntermediateTensors({{"hidden_states": {x}[0]}})']
            return lines + self.stmts(body[i + 1:])
        if pipe is None:
            stack = next((fp.attr for (m, _), fp in self.gen.plan.fields.items()
                          if m == self.gen.plan.root and fp.kind == "stack"), None)
            if stack is None:
                return self.stmts(body)
            why = f"this model can't be run in pipeline stages: {self.gen.parallel.no_pipeline}"
            return [f"if any(isinstance(layer, nn.Identity) for layer in self.{stack}):  # a pipeline stage",
                    f"    raise NotImplementedError({py_str(why)})"] + self.stmts(body)
        i = next(k for k, s in enumerate(body) if s is pipe.loop)
        x = self.var(pipe.carried)
        before = self.stmts(body[:i]) or ["pass"]
        lines = [f"first_stage = not isinstance(self.{pipe.layers}[0], nn.Identity)  # pipeline stages (vLLM)",
                 f"last_stage = not isinstance(self.{pipe.layers}[-1], nn.Identity)",
                 "if first_stage:"]
        lines += ["    " + line for line in before]
        lines += ["else:", f"    {x} = inputs_embeds  # the hidden states of the stage before"]
        lines += self.stmts([pipe.loop])
        lines += ["if not last_stage:  # the hidden states, for the stage after"]
        lines += ["    " + line for line in self.hidden_return(x)]
        return lines + self.stmts(body[i + 1:])

    @staticmethod
    def hidden_return(hidden: str) -> list:
        return [f"hidden_states = {hidden}",
                "if return_dict is False:",
                "    return (hidden_states, past_key_values)",
                "return with_cache(BaseModelOutputWithPast, past_key_values, last_hidden_state=hidden_states)"]

    def stmts(self, body) -> list:
        out = []
        for s in body:
            out.append(f"# line {s.line}: {py_comment(s.src)}")
            if isinstance(s, Bind):
                targets = ", ".join(self.var(t) for t in s.targets)
                if id(s) in self.attention.elided:
                    code = self.ex(self.attention.elided[id(s)])
                    out[-1] += "  (keys and values keep their heads: attention repeats them)"
                    if code != targets:
                        out.append(f"{targets} = {code}")
                    continue
                code = self.ex(s.value)
                out += self.flush()
                out.append(f"{targets} = {code}")
            elif isinstance(s, Loop):
                it = self.ex(s.iter)
                out += self.flush()
                if s.index is not None:  # the copy's index: a plain int, as the source's
                    out.append(f"for {self.var(s.index)}, {self.var(s.var)} in enumerate({it}):")
                else:
                    out.append(f"for {self.var(s.var)} in {it}:")
                out.extend("    " + line for line in self.stmts(s.body))
            elif isinstance(s, Ret):
                lines = self.ret(s)
                out += self.flush() + lines
        return out

    # ------------------------------------------------------------ deep expressions
    HOIST_EVERY = 32  # nesting levels per generated line: parsers of the file (Python's, transformers') recurse

    def flush(self) -> list:
        lines, self.pending = self.pending, []
        return lines

    def _hoist(self, code: str) -> str:
        """A deeply nested operand as a temporary of its own, written before the statement."""
        self.temps += 1
        name = f"_deep{self.temps}"
        while name in self.local_names:
            name += "_"
        self.pending.append(f"{name} = {code}")
        return name

    def ret(self, s: Ret) -> list:
        if not self.lm_entry:
            return [f"return {self.ex(s.value)}"]
        out = self.lm.out_node
        hidden = self.ex(out.attrs["args"]["x"])
        if self.gen.flavor == "vllm":
            return [f"hidden_states = {hidden}  # the output layer `{self.lm.output}` is the lm_head",
                    "return hidden_states[0]  # back to vLLM's flat tokens"]
        lines = self.hidden_return(hidden)
        lines[0] += f"  # the output layer `{py_comment(self.lm.output)}` is the lm_head"
        return lines

    # ------------------------------------------------------------ expressions
    def ex(self, n) -> str:
        self.depth += 1
        try:
            code = self._ex(n)
        finally:
            self.depth -= 1
        if n.inputs and self.depth and self.depth % self.HOIST_EVERY == 0:
            return self._hoist(code)
        return code

    def _ex(self, n) -> str:
        op = n.op
        if op == "local":
            return self.var(n.attrs["name"])
        if op == "size":
            return self.need_size(n.attrs["size"], n.where)
        if op == "const":
            v = n.attrs["value"]
            if isinstance(v, bool):
                return "True" if v else "False"
            if v == float("inf"):
                return 'float("inf")'
            if v == float("-inf"):
                return 'float("-inf")'
            return repr(v)
        if op == "dtype":
            if n.attrs["dtype"] == "f32":  # a bfloat16 load's `to(x, f32)` then meets its weights
                return self.loaded_float()
            return TORCH_DTYPES[n.attrs["dtype"]]
        if op == "string":
            return repr(n.attrs["value"])
        if op == "field":
            return self.field(n)
        if op == "causal_mask":
            a, b = n.attrs["axes"]
            self.gen.helpers.add("causal")
            return f"causal({self.need_size(a.size, n.where)}, {self.need_size(b.size, n.where)}, {self.device})"
        if op == "tuple":
            return "(" + ", ".join(self.ex(i) for i in n.inputs) + ("," if len(n.inputs) == 1 else "") + ")"
        if op == "neg":
            return f"-{atom(self.ex(n.inputs[0]))}"
        if op == "not":
            x = n.inputs[0]
            return f"~{atom(self.ex(x))}" if isinstance(x.type, TensorT) else f"not {atom(self.ex(x))}"
        if op == "matmul":
            return self.matmul(n, n.inputs[0], n.inputs[1])
        if op in OPERATORS:
            return self.elementwise(n, OPERATORS[op], n.inputs[0], n.inputs[1])
        if op == "if":  # a compile-time condition: a plain Python conditional
            c, a, b = (self.ex(i) for i in n.inputs)
            return f"({a} if {c} else {b})"
        if op == "call":
            return self.call(n)
        if op in BUILTINS:
            return self.builtin(n)
        raise CompileError(f"can't compile `{op}`", n.where)

    def field(self, n) -> str:
        obj = self.ex(n.inputs[0])
        t = n.inputs[0].type
        fp = self.gen.plan.fields.get((t.name, n.attrs["name"])) if isinstance(t, ModelT) else None
        if fp is None:
            raise CompileError(f"can't read `{n.attrs['name']}`", n.where)
        if fp.kind in ("linear", "embedding", "lm_head"):
            return f"{obj}.{fp.attr}.weight"
        if fp.kind == "bias":
            owner = self.gen.plan.fields[(t.name, fp.folded_into)]
            return f"{obj}.{owner.attr}.bias"
        return f"{obj}.{fp.attr}"

    def _module_field(self, node, kinds) -> Optional[str]:
        """`obj.attr` when node reads a field that is a module of one of these kinds."""
        if node.op != "field":
            return None
        t = node.inputs[0].type
        fp = self.gen.plan.fields.get((t.name, node.attrs["name"])) if isinstance(t, ModelT) else None
        if fp is None or fp.kind not in kinds:
            return None
        return f"{self.ex(node.inputs[0])}.{fp.attr}"

    def elementwise(self, n, sym: str, a, b) -> str:
        t = n.type
        axes = t.axes if isinstance(t, TensorT) else ()
        return f"{self._operand(a, axes, sym, False)} {sym} {self._operand(b, axes, sym, True)}"

    def _operand(self, node, axes, sym: str, right: bool) -> str:
        code = self.ex(node)
        moved = align(atom(code), node.type, axes)
        return moved if moved != atom(code) else operand(code, sym, right)

    def _aligned(self, node, axes) -> str:
        """A function argument aligned to axes: parenthesized only if a suffix was added."""
        code = self.ex(node)
        moved = align(atom(code), node.type, axes)
        return moved if moved != atom(code) else code

    def matmul(self, n, a, b) -> str:
        lt, rt = a.type, b.type
        x, w = atom(self.ex(a)), atom(self.ex(b))
        if len(rt.axes) <= 2:
            return f"{x} @ {w}"
        batch = tuple(n.type.axes[:-1])
        rbatch = Counter(a.name for a in rt.axes[:-2])
        if batch == tuple(lt.axes[:-1]) and len(lt.axes) >= 2 and \
                not rbatch - Counter(a.name for a in lt.axes[:-2]):
            # the right's batch axes are among the left's (not its rows): torch's matmul
            # broadcasts them once they stand where the left has them
            return f"{x} @ {align(w, rt, tuple(lt.axes[:-2]) + tuple(rt.axes[-2:]))}"
        # otherwise one einsum over the result's axes, each operand's batch axes by name
        letters: dict = {}
        seen: Counter = Counter()
        out = ""
        for a in n.type.axes:  # one letter per result axis, a repeated name's too
            out += PatternLowering._letter(letters, f"{a.name}{chr(39) * seen[a.name]}")
            seen[a.name] += 1
        k = PatternLowering._letter(letters, f"{lt.axes[-1].name} (contracted)")
        left = "".join(out[p] for p in match_positions(lt.axes[:-1], batch)) + k
        right = "".join(out[p] for p in match_positions(rt.axes[:-2], batch)) + k + out[-1]
        return f'torch.einsum("{left},{right}->{out}", {x}, {w})'

    # ------------------------------------------------------------ user calls
    def call(self, n) -> str:
        callee = self.gen.prog.fns[n.attrs["fn"]]
        args = n.attrs["args"]
        params = callee.params
        first = params[0][1] if params else None
        codes, skipped = [], False
        start = 1 if isinstance(first, ModelT) else 0
        for pname, ptype, _ in params[start:]:
            a = args.get(pname)
            if a is None:
                skipped = True
                continue
            c = self.as_param(self.ex(a), ptype, a.type, in_call=True)
            codes.append(f"{self.gen.param_names(callee)[pname]}={c}" if skipped else c)
        if callee.name in self.gen.attention_fns:
            codes.append(ATTENTION_KWARGS)
        if isinstance(first, ModelT):
            owner = atom(self.ex(args[params[0][0]]))
            cls = self.gen.classes[first.name]
        else:
            owner, cls = "self", self.cls
        method = cls.methods[callee.name]
        if method == "forward":
            return f"{owner}({', '.join(codes)})"
        return f"{owner}.{method}({', '.join(codes)})"

    def as_param(self, code: str, ptype, atype, in_call: bool = False) -> str:
        """An argument (or a parameter's default) as its parameter holds it: a number
        passed to a tensor parameter of shape [] becomes a tensor, so that the callee's
        tensor operations take it. In a call, an f32 one is in the float type the model is
        loaded in (`float_dtype`, as the evaluator's f32 is float64 in a float64
        evaluation: in a float64 load, `s / sqrt(Dh)` of a parameter `s: []` given `1 / H`
        was rounded to float32); a default, evaluated where the method is defined, stays
        float32. In a call it is made on the device of the caller's inputs (a CUDA model's
        callee meets no CPU tensor)."""
        if isinstance(ptype, TensorT) and not ptype.axes and isinstance(atype, ScalarT):
            dtype = TORCH_DTYPES.get(ptype.dtype.name, "torch.int64")
            if not in_call:
                return f"torch.tensor({code}, dtype={dtype})"
            if ptype.dtype.name == "f32":
                dtype = self.loaded_float()
            return f"torch.tensor({code}, dtype={dtype}, device={self.device})"
        return code

    # ------------------------------------------------------------ builtins
    def arg(self, n, name):
        return n.attrs["args"].get(name)

    def builtin(self, n) -> str:
        """The call's code: its row's lowering (check/builtin_lowering.py), with this
        method generator as the `Emitter`."""
        lower = BUILTINS[n.op].lower
        if lower is None:
            raise CompileError(f"can't compile `{n.op}`", n.where)
        return lower(self, n)

    # ------------------------------------------------------------ the Emitter interface
    atom = staticmethod(atom)
    dims = staticmethod(dims_arg)

    @staticmethod
    def default(builtin: str, param: str):
        return _default(builtin, param)

    @staticmethod
    def error(message: str, where) -> Exception:
        return CompileError(message, where)

    def use_helper(self, name: str) -> None:
        self.gen.helpers.add(name)

    def loaded_float(self) -> str:
        """The source's f32 in the generated code: the float type the model's weights were
        loaded in (`float_dtype`; float32 in a float32 load, bfloat16 in a bfloat16 one)."""
        self.use_helper("float_dtype")
        return "float_dtype(self)"

    def module_field(self, node, kinds) -> Optional[str]:
        return self._module_field(node, kinds)

    def bias_folded(self, w) -> bool:
        return self.gen.plan.fields[(w.inputs[0].type.name, w.attrs["name"])].bias is not None

    def is_lm_embedding(self, n) -> bool:
        return bool(self.lm_entry) and n is self.lm.embed_node

    def aligned(self, node, axes) -> str:
        return self._aligned(node, axes)

    def rotary_tables(self, pos, x) -> Optional[tuple]:
        """The model's rotary table (cos, sin) as this method receives it, aligned to x, when
        the ropes rotate by it (rotary_plan.py); else None."""
        if self.gen.rotary is None:
            return None
        placed = TensorT(tuple(pos.type.axes) + (x.type.axes[-1],), x.type.dtype)
        return tuple(align(f'kwargs["position_embeddings"][{i}]', placed, x.type.axes) for i in (0, 1))

    def over(self, n):
        """The positions of `over=`'s axes, each name standing for one axis."""
        x = self.arg(n, "x")
        for name, shown in zip(n.attrs["over"], n.attrs.get("over_names") or n.attrs["over"]):
            count = sum(1 for a in x.type.axes if a.name == name)
            if count > 1:
                raise CompileError(f"`{n.op}(over={shown})`: `{shown}` names {count} axes of the tensor; "
                                   f"rename one with a pattern first", n.where)
        return positions(x.type, n.attrs["over"])

    def weight_over(self, n, w, ps) -> str:
        x = self.arg(n, "x")
        placed = TensorT(tuple(x.type.axes[p] for p in ps), w.type.dtype)
        return align(atom(self.ex(w)), placed, x.type.axes)

    def lm_attention(self, n) -> Optional[str]:
        """A language model's attention: keys and values at their own head count
        (attention_plan.py), through the site's attention module and the KV cache."""
        if not self.lm:
            return None
        q, k, v = self.arg(n, "q"), self.arg(n, "k"), self.arg(n, "v")
        self.gen.helpers.add("attend")
        ks, vs = self._kv(k), self._kv(v)
        attr = self.cls.site_attrs[id(n)]
        if self.gen.arg_scale(n) is not None and self.gen.site_scale(n) is None:
            # not one number at export: this call's scale, set before the statement runs
            self.pending.append(f"self.{attr}.scaling = {self.scalar(n, 'scale', number=True)}")
        sinks = self.arg(n, "sinks")
        if sinks is not None:  # v0.3 (gpt-oss): transformers' attention functions call them s_aux
            if self.gen.flavor == "vllm":
                raise CompileError("the vLLM export can't run attention sinks yet (`sinks=`)", n.where)
            return f"self.{attr}({self.ex(q)}, {ks}, {vs}, s_aux={self.ex(sinks)}, {ATTENTION_KWARGS})"
        return f"self.{attr}({self.ex(q)}, {ks}, {vs}, {ATTENTION_KWARGS})"

    def scalar(self, n, name: str, number: bool = False) -> str:
        """The code of a scalar keyword as the call writes it (a literal, a dim, a
        parameter, arithmetic: whatever it computes), else the builtin's default.
        `number`: a tensor of shape [] becomes a Python float (attention's scale)."""
        node = self.arg(n, name)
        if node is None:
            return repr(_default(n.op, name))
        code = self.ex(node)
        return f"float({code})" if number and isinstance(node.type, TensorT) else code

    def _kv(self, node) -> str:
        """The keys or values at their own head count (attention_plan.py)."""
        return self.ex(self.attention.sources.get(id(node), node))

    def same_order(self, r, first, i):
        t = r.type
        j = t.index_of(first.axes[i].name)
        others = [k for k in range(len(t.axes)) if k != j]
        perm = others[:i] + [j] + others[i:]
        return permute_code(atom(self.ex(r)), perm)

    def expert_einsum(self, n):
        code = expert_einsum(self, n)
        if code is not None and id(n) in self.gen.experts.reduced:  # each rank's share of the experts' width
            return f"tensor_model_parallel_all_reduce({code})"
        return code

    def pattern(self, n) -> PatternLowering:
        pat = n.attrs["pattern"]
        env = self.g.env

        def size_of(name):
            a = pat.bind.get(name)
            if a is not None:
                return a.size
            d = env.dim(name)
            if d is None:
                raise CompileError(f"`{name}` has no size", n.where)
            return d
        return PatternLowering(pat, size_of, self.size, self.gen.parallel.local_sizes)


def _default(builtin: str, param: str):
    for p, d in BUILTINS[builtin].params:
        if p == param:
            return d
    return None


def _all_binds(body):
    for s in body:
        if isinstance(s, Bind):
            yield s
        elif isinstance(s, Loop):
            yield from _all_binds(s.body)


def _loop_vars(body):
    """The variables of the `for` loops of a body, nested ones included."""
    for s in body:
        if isinstance(s, Loop):
            yield s.var
            if s.index is not None:
                yield s.index
            yield from _loop_vars(s.body)
