"""Exports compared with the reference evaluator (`shapescript_core.evaluate`).

`Case` holds one program: its source, the function, random weights and inputs. `run_hf`
exports it with the real exporter (`run_export`, as the CLI does), loads the directory
with transformers (`trust_remote_code=True`) and returns its outputs: the full sequence,
and for a language model the logits again through the KV cache, a prefix first and then
one token at a time. `compare` holds them to the evaluator's within 1e-5 relative.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Optional

RTOL = 1e-5  # relative, in f32: of the largest magnitude of the reference output
TOKENS_N = 5


@dataclass
class Case:
    source: str
    fn: str = "forward"
    lm: bool = False           # forward(m, ids, pos) -> [b n V]: a language-model export
    dims: dict = field(default_factory=dict)
    seed: int = 0
    plain_scalar: bool = False  # a plain forward(m, x, ids, pos) that also takes `s: []`


def case_text(case: Case, note: str = "") -> str:
    """A case as a file: its source after a header line that `case_from_text` reads back."""
    kind = "lm" if case.lm else ("plain+s" if case.plain_scalar else "plain")
    return f"# case: {kind} weights-seed={case.seed}{(' ' + note) if note else ''}\n{case.source}"


def case_from_text(text: str) -> Case:
    """The case a file holds (`case_text`); without the header, guessed from the source."""
    import re
    m = re.search(r"^# case: (lm|plain\+s|plain) weights-seed=(\d+)", text, re.M)
    if m:
        return Case(text, lm=m.group(1) == "lm", plain_scalar=m.group(1) == "plain+s", seed=int(m.group(2)))
    return Case(text, lm="-> [b n V]:" in text, plain_scalar=bool(re.search(r"fn forward\(.*s: \[\]", text)))


def quiet():
    """No progress bars or load reports from transformers for hundreds of loads."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as tlog
    tlog.set_verbosity_error()
    tlog.disable_progress_bar()


def rel_error(got, want) -> float:
    import torch
    got, want = got.detach().double(), want.detach().double()
    if got.shape != want.shape:
        return float("inf")
    if torch.isnan(want).any() or torch.isnan(got).any():
        return 0.0 if torch.equal(torch.isnan(got), torch.isnan(want)) and torch.allclose(
            got.nan_to_num(), want.nan_to_num(), rtol=0, atol=RTOL * (1 + want.nan_to_num().abs().max())) else float("inf")
    scale = max(1.0, want.abs().max().item())
    return (got - want).abs().max().item() / scale


def evaluator_outputs(case: Case, prog=None):
    """(the program, its weights, inputs, the evaluator's output)."""
    import torch
    from shapescript_core.evaluate import load
    prog = prog or load(case.source, dims=case.dims)
    weights = prog.random_weights(case.fn, seed=case.seed, std=0.5)
    g = torch.Generator().manual_seed(case.seed + 1)
    dims = prog.analysis.env.dims.values
    inputs = {"ids": torch.randint(0, dims["V"], (2, TOKENS_N), generator=g),
              "pos": torch.arange(TOKENS_N).unsqueeze(0).expand(2, TOKENS_N).contiguous()}
    if not case.lm:  # a plain forward(m, x, ids, pos[, s])
        inputs["x"] = torch.randn(2, TOKENS_N, dims["D"], generator=g)
        if case.plain_scalar:
            inputs["s"] = torch.tensor(0.75)
    with torch.no_grad():
        out = prog.run(case.fn, weights, **inputs)
    return prog, weights, inputs, out


def export(case: Case, weights: dict, out: str, target: str = "hf"):
    """Export with the real pipeline; returns the ExportResult."""
    from safetensors.torch import save_file
    from shapescript_core.export.request import make_request
    from shapescript_core.export.run import run_export
    from shapescript_core.workspace import Workspace
    os.makedirs(out + "-src", exist_ok=True)
    src = os.path.join(out + "-src", "prog.ss")
    with open(src, "w") as fh:
        fh.write(case.source)
    wpath = os.path.join(out + "-src", "w.safetensors")
    save_file({k: v.contiguous() for k, v in weights.items()}, wpath)
    from shapescript_core.settings import Config
    # no settings: a shapescript.toml that another program left above the temporary folder
    # (its [limits], its [export]) must not change this export
    req = make_request(src, target, fn=case.fn, output=out, weights=wpath, dims=case.dims, force=True,
                       settings=Config())
    return run_export(Workspace(dict(case.dims)), req)


def hf_outputs(case: Case, out: str, inputs: dict, dtype=None) -> dict:
    """The loaded export's outputs: {"full": ..., "cached": ...} (cached: language models).
    `dtype` (default f32): the dtype the model is loaded in, and its float inputs cast to."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM
    dtype = dtype or torch.float32
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    res = {}
    with torch.no_grad():
        if case.lm:
            model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, dtype=dtype).eval()
            ids = inputs["ids"]
            res["full"] = model(ids, use_cache=False).logits
            first = model(ids[:, :2], use_cache=True)
            steps = [first.logits]
            cache = getattr(first, "cache", None) or first.past_key_values
            for t in range(2, ids.shape[1]):
                o = model(ids[:, t:t + 1], past_key_values=cache, use_cache=True)
                cache = getattr(o, "cache", None) or o.past_key_values
                steps.append(o.logits)
            res["cached"] = torch.cat(steps, dim=1)
        else:
            model = AutoModel.from_pretrained(out, trust_remote_code=True, dtype=dtype).eval()
            res["full"] = model(**inputs)
    return res


def f64_outputs(case: Case, prog, weights: dict, inputs: dict):
    """The evaluator's output with float weights and inputs in f64: the value the f32
    computations approximate (None where the program's own casts prevent it)."""
    import torch

    def up(t):
        return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
    try:
        with torch.no_grad():
            return prog.run(case.fn, {k: up(v) for k, v in weights.items()}, float64=True,
                            **{k: up(v) for k, v in inputs.items()})
    except (RuntimeError, TypeError):  # an explicit f64 meeting f32: no estimate
        return None


def agrees(err32: float, got, want, want64) -> bool:
    """Within RTOL of the f32 evaluation; or, where the program is so ill-conditioned
    that the f32 evaluation is itself that far from the f64 one, no farther from the
    f64 evaluation than the f32 evaluation is, give or take RTOL."""
    if err32 <= RTOL:
        return True
    if want64 is None or isinstance(want, tuple):
        return False
    own = rel_error(want.double(), want64)
    return own > RTOL / 2 and rel_error(got.double(), want64) <= 2 * own + RTOL


SENSITIVITY_EPS = 2.0 ** -19  # relative: a few f32 rounding units (2**-24)
SENSITIVITY_FACTOR = 10
PROBE_EPS = 2.0 ** -22  # relative, each operation's result: four f32 rounding units


def sensitivity(case: Case, prog, weights: dict, inputs: dict, want, trials: int = 2) -> float:
    """How far the evaluator's own f32 output moves when every float weight and input is
    moved by a few rounding units (relative SENSITIVITY_EPS), or every float result of an
    operation is (the evaluator's rounding probe: a sum that cancels to exactly zero in one
    order of additions and not in another, which no change of the inputs shows): how
    much this program, here, amplifies f32 rounding (a branch of `max`/`where` that flips,
    a cancellation)."""
    import torch
    g = torch.Generator().manual_seed(case.seed + 2)

    def nudge(v):
        if not (isinstance(v, torch.Tensor) and v.is_floating_point()):
            return v
        return v * (1 + SENSITIVITY_EPS * torch.randn(v.shape, generator=g, dtype=v.dtype))
    worst = 0.0
    for _ in range(trials):
        with torch.no_grad():
            moved = prog.run(case.fn, {k: nudge(v) for k, v in weights.items()},
                             **{k: nudge(v) for k, v in inputs.items()})
            probed = prog.run(case.fn, weights, noise=(PROBE_EPS, g), **inputs)
        worst = max(worst, rel_error(moved, want), rel_error(probed, want))
    return worst


def conditioned(case: Case, prog, weights: dict, inputs: dict, want, want64, out: str, bad: dict):
    """{output name: why} for the disagreements that are f32 rounding amplified, not a
    different function: the export loaded in f64 agrees with the evaluator in f64 within
    RTOL (the same function), and the evaluator's own f32 output moves by at least
    1/SENSITIVITY_FACTOR of the disagreement under a nudge of a few rounding units (the
    program amplifies rounding that much here). A miscompile fails the first; an export
    that loses precision (a cast to a narrower type) on a well-conditioned program, the
    second. Where the program casts to f32 itself (NARROWING_CAST), the export's f64 run
    rounds there too: its f64 difference must then be one the nudge accounts for too."""
    import torch
    if want64 is None or isinstance(want, tuple):
        return {}
    try:
        got64 = hf_outputs(case, out, inputs, dtype=torch.float64)
    except RuntimeError as e:  # an export that does not run in f64 (its own casts to f32): no verdict
        logging.getLogger("differential").info("no f64 run of the export: %s", e)
        return {}
    sens = None
    res = {}
    for k, e in bad.items():
        e64 = rel_error(got64[k], want64) if isinstance(got64.get(k), torch.Tensor) else float("inf")
        casts = not e64 <= RTOL and NARROWING_CAST.search(case.source) is not None
        if not e64 <= RTOL and not casts:
            continue
        sens = sensitivity(case, prog, weights, inputs, want) if sens is None else sens
        if sens * SENSITIVITY_FACTOR >= e and (not casts or sens * SENSITIVITY_FACTOR >= e64):
            res[k] = (f"{k}: {e:.2e} in f32; {e64:.2e} in f64{' (its own casts to f32 round there)' if casts else ''}"
                      f"; a nudge of the inputs or of each result moves the evaluator {sens:.2e}")
    return res


# a cast to a narrower float (`|> to(f16)`, `to(x, bf16)`): the export run in f64 rounds there
# too, so its f64 output is not the f64 value; rounding amplified accounts for it as for
# the f32 disagreement. (`to(x, f32)` is the loaded type, float64 in both f64 runs.)
NARROWING_CAST = re.compile(r"\bto\((?:[^()]*,\s*)?(?:f16|bf16)\)")


def compare(want, got: dict) -> dict:
    """{output name: relative error}."""
    import torch
    out = {}
    for k, v in got.items():
        if isinstance(want, tuple):
            out[k] = max(rel_error(g, w) for g, w in zip(v, want)) if isinstance(v, tuple) else float("inf")
        elif isinstance(v, torch.Tensor):
            out[k] = rel_error(v, want)
        else:
            out[k] = float("inf")
    return out


def check_hf(case: Case, tmp: str) -> Optional[str]:
    """None when the --hf export agrees with the evaluator; else what differs."""
    prog, weights, inputs, want = evaluator_outputs(case)
    out = os.path.join(tmp, f"hf{abs(hash(case.source)) % 10**8}")
    r = export(case, weights, out)
    if not r.ok:
        return f"export failed: {r.message} {[d.message for d in r.diagnostics]}"
    errs = compare(want, hf_outputs(case, out, inputs))
    bad = {k: e for k, e in errs.items() if not e <= RTOL}
    return None if not bad else f"outputs differ from the evaluator: {bad}"


def run_case(case: Case, tmp: str) -> dict:
    """{"checked": bool, target: (status, why)}: status "agree", "disagree", "conditioned"
    (outputs differ only as far as the program amplifies f32 rounding: `conditioned`), or
    "refused" (the export declined with a diagnostic, which is allowed, and counted apart)."""
    from shapescript_core.evaluate import EvaluateError, load
    try:
        prog = load(case.source, dims=case.dims)
    except EvaluateError:
        return {"checked": False}
    prog, weights, inputs, want = evaluator_outputs(case, prog)
    out = os.path.join(tmp, f"hf{abs(hash(case.source)) % 10**8}")
    r = export(case, weights, out)
    if not r.ok:
        if r.diagnostics:
            return {"checked": True, "hf": ("refused", r.message)}
        return {"checked": True, "hf": ("disagree", f"export failed: {r.message}")}
    got = hf_outputs(case, out, inputs)
    errs = compare(want, got)
    bad = {k: e for k, e in errs.items() if not e <= RTOL}
    if bad:
        want64 = f64_outputs(case, prog, weights, inputs)
        bad = {k: e for k, e in bad.items() if not agrees(e, got[k], want, want64)}
        if bad:
            cond = conditioned(case, prog, weights, inputs, want, want64, out, bad)
            if len(cond) == len(bad):
                return {"checked": True, "hf": ("conditioned", "; ".join(cond.values()))}
    return {"checked": True, "hf": ("disagree", f"outputs differ: {bad}") if bad else ("agree", "")}


GGUF_RTOL = 1e-4  # llama.cpp's own kernels (rope, softmax, matmul order): as the GGUF tests


def run_gguf(case: Case, tmp: str) -> dict:
    """{"checked": bool, "gguf": (status, why)}: the --gguf export run by llama.cpp (one
    sequence, all positions' logits) against the evaluator."""
    import numpy as np
    import torch
    from shapescript_core.evaluate import EvaluateError, load
    try:
        prog = load(case.source, dims=case.dims)
    except EvaluateError:
        return {"checked": False}
    prog, weights, inputs, want = evaluator_outputs(case, prog)
    out = os.path.join(tmp, f"g{abs(hash(case.source)) % 10**8}.gguf")
    r = export(case, weights, out, target="gguf")
    if not r.ok:
        return {"checked": True, "gguf": ("refused" if r.diagnostics else "disagree", r.message)}
    from gguf_support import llama_cpp_logits
    tokens = [int(t) for t in inputs["ids"][0]]
    got = torch.from_numpy(np.asarray(llama_cpp_logits(out, tokens)))
    err = rel_error(got, want[0])
    ok = err <= GGUF_RTOL
    return {"checked": True, "gguf": ("agree", "") if ok else ("disagree", f"logits differ: {err:.2e}")}
