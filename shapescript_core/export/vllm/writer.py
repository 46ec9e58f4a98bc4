"""The `vllm` writer: the `hf` directory plus a README saying how vLLM serves it.

vLLM's Transformers backend runs the generated model as it is: the base model takes
vLLM's flattened tokens as a batch of one and honours the positions it is given, each
attention goes through `ALL_ATTENTION_FUNCTIONS` (vLLM substitutes its paged attention)
with an integer `layer_idx`, and the keyword arguments reach it.
"""
from __future__ import annotations

import os

from ..hf.writer import _size, write_directory
from ...escape import md_code, py_str, shell_arg, shown
from ...compile.graph import CompileError
from ...export_errors import ExportError
from ..generated import copy_sources, write_generated
from .native import plugin_files

README = """# {name}: a ShapeScript export for vLLM

Exported by ShapeScript from {source} (function `{fn}`). The directory is a Hugging
Face model (`config.json`, `modeling_{stem}.py`, `model.safetensors`) that vLLM's
Transformers backend serves:

```
vllm serve {out_sh} --trust-remote-code --model-impl transformers{tok}
```

## The native vLLM model

`vllm_plugin/` is a pip-installable vLLM plugin: it registers a native vLLM model of
the same source (vLLM's paged attention, `VocabParallelEmbedding`, `ParallelLMHead`),
so that vLLM runs it without the Transformers backend:

```
pip install {plugin_sh}
vllm serve {out_sh} --trust-remote-code{tok}
```

(`--model-impl vllm` insists on it; `pip uninstall {dist}` removes it.)

## Serving

or, from Python:

```python
from vllm import LLM, SamplingParams

llm = LLM(model={out_py}, trust_remote_code=True, model_impl="transformers"{tok_py})
outputs = llm.generate({prompt}, SamplingParams(max_tokens=16, temperature=0))
```

{tok_note}vLLM packs the tokens of many requests along one axis; the export checks
(E3301 to E3306) are what make that safe for this model: see "Serving engines" in the
ShapeScript docs.

## Several GPUs or machines

Both models split across ranks: `--tensor-parallel-size N` gives each rank a share of
every layer's heads and hidden units (`base_model_tp_plan` in `config.json`; vLLM's
parallel layers in the native model), `--pipeline-parallel-size N` a range of the layers
(`base_model_pp_plan`):

```
vllm serve {out_sh} --trust-remote-code --model-impl transformers{tok} --tensor-parallel-size 2
```

`shapescript check --target vllm --tensor-parallel N` says first whether this model
splits N ways (E3307). Across machines, add `--distributed-executor-backend ray` on a
Ray cluster; on the CPU, bind each rank to its cores: `VLLM_CPU_OMP_THREADS_BIND='0|1'`.
"""


def write(ctx) -> str:
    out = write_directory(ctx)
    if not out["lm"]:
        raise ExportError(f"`{ctx.fn_item.name}` isn't a language model, so vLLM can't serve it: "
                          "export it with --hf")
    art = out["artifact"]
    ctx.progress("generating the native vLLM model", 0, 1)
    try:
        files = plugin_files(art.plan.prog, art.plan, art.names, os.path.basename(ctx.request.path))
    except CompileError as e:
        raise ExportError(f"can't generate the native vLLM model: {e}") from e
    for rel, text in files.items():
        write_generated(ctx.tmp, f"vllm_plugin/{rel}", text)
    has_tok = any(os.path.isfile(os.path.join(ctx.tmp, f)) for f in ("tokenizer.json", "tokenizer.model"))
    text = README.format(
        name=shown(os.path.basename(ctx.request.output)), source=md_code(os.path.basename(ctx.request.path)),
        dist=f"shapescript-vllm-{art.names.stem}",
        fn=ctx.fn_item.name, stem=art.names.stem, out_sh=shell_arg(ctx.request.output),
        plugin_sh=shell_arg(os.path.join(ctx.request.output, "vllm_plugin")), out_py=py_str(ctx.request.output),
        tok="" if has_tok else " --skip-tokenizer-init",
        tok_py="" if has_tok else ", skip_tokenizer_init=True",
        prompt='["Hello"]' if has_tok else '[{"prompt_token_ids": [1, 2, 3]}]',
        tok_note="" if has_tok else ("This export has no tokenizer (export with `--tokenizer DIR` to ship one): "
                                     "give vLLM token ids, and `detokenize=False` in SamplingParams.\n\n"))
    write_generated(ctx.tmp, "README.md", text)
    copy_sources(ctx.tmp, art.sources)
    return f"wrote {ctx.request.output} (vllm: {out['tensors']} tensors, {_size(out['bytes'])}; README.md says how to serve it)"
