"""The LiteRT-Torch `ModelExtension` generated for one export (`shapescript_litert_<stem>.py`).

`export_hf` loads the `hf` export as a `trust_remote_code` checkpoint; the extension,
registered for the export's `model_type`, tells it what it can't see by itself:

- **`odml.rms_norm` composites.** The generated model normalizes through a module-level
  `rms_norm(x, weight, dims, eps)`, invisible to `export_hf`'s own patches. `patch_model`
  swaps it, in the loaded modeling module, for one that sends a norm over the last axis
  with a `[D]` weight and a number for eps through `normalization.rms_norm_with_hlfb`
  (the same arithmetic in float32) and any other norm (an eps that came through a
  parameter is a tensor, which no composite attribute holds) to the original; the
  original is restored on exit.
- **The causal flag.** `export_hf` marks prefill attention causal (`odml.sdpa_transposed`
  `is_causal`, with GPU composites) only for model types on its allowlist: the
  extension's prefill/decode exportables say a text export of this model is causal (the
  export checks guarantee it: E3304 allows only `attn_mask=causal[n n]`).
- **Stop tokens.** The tokenizer's end-of-sequence ids, added to the `.litertlm`'s
  metadata (the LiteRT-LM engine refuses a session without any) when
  `generation_config.json` did not give them already.
- **A tied head for Converter V2** (`--use_v2`, which needs tf-nightly). Its checkpoint
  loader serves a tied `lm_head.weight` only from embedding keys of its own list
  (`model.embed_tokens.weight`, `transformer.wte.weight`, ...); `patch_context` (around
  model loading, where export_hf makes the loader) gives it this export's table key
  (`model.<table>.weight`) as well.

Every user-controlled string reaches the generated file through `repr` (`_py`).
"""
from __future__ import annotations

TEMPLATE = '''"""LiteRT-Torch ModelExtension for a ShapeScript export (generated: do not edit).

Registers itself for the export's model type when imported: pass this module's name to
`export_hf` with the directory holding it on PYTHONPATH, e.g.

    PYTHONPATH=. litert-torch export_hf --model=hf --output_dir=out --trust_remote_code=True \\\\
        --extension_modules={module} --quantization_recipe=none --prefill_logits=True \\\\
        --prefill_lengths={prefill} --cache_length={cache} --keep_temporary_files=True

(see README.md beside it). What it does: `odml.rms_norm` composites for the norms over
the last axis, the causal flag of prefill attention, the stop tokens, and (Converter V2)
the tied head's checkpoint key.
"""
import contextlib
import sys

import torch
from litert_torch.generative.export_hf.core import exportable_module
from litert_torch.generative.export_hf.core import exportable_module_config
from litert_torch.generative.export_hf.core import weights_loader
from litert_torch.generative.export_hf.model_ext import extension
from litert_torch.generative.layers import normalization

SOURCE = {source}
FUNCTION = {function}
MODEL_TYPE = {model_type}
STOP_TOKEN_IDS = {stop_ids}
TIED_TABLE = {tied_table}  # the checkpoint key of the table a tied lm_head reads, or None


def _last_axis(x, weight, dims) -> bool:
    """True for a norm over x's last axis only, with a [D] weight (what odml.rms_norm is)."""
    if isinstance(dims, (tuple, list)):
        if len(dims) != 1:
            return False
        dims = dims[0]
    if not isinstance(dims, int) or dims % x.dim() != x.dim() - 1:
        return False
    return isinstance(weight, torch.Tensor) and weight.dim() == 1 and weight.shape[0] == x.shape[-1]


def composite_rms_norm(original):
    """`rms_norm` of the generated model, as an odml.rms_norm composite where it can be one."""

    def rms_norm(x, weight, dims, eps):
        # a composite's attributes are numbers: an eps passed through a parameter `e: []`
        # is a tensor, normalized as written (export_hf refused the composite before)
        if not _last_axis(x, weight, dims) or not isinstance(eps, (int, float)) or isinstance(eps, bool):
            return original(x, weight, dims, eps)
        dtype = x.dtype
        ones = torch.ones((x.shape[-1],), dtype=torch.float32, device=x.device)
        return normalization.rms_norm_with_hlfb(x.float(), weight, eps, ones).to(dtype)

    rms_norm.shapescript_original = original
    return rms_norm


def modeling_module(model):
    """The generated modeling_*.py, as transformers loaded it (transformers_modules....)."""
    return sys.modules.get(type(model).__module__)


PATCHED = ("rms_norm",)  # the module-level functions patch_model replaces


@contextlib.contextmanager
def patched(model):
    """The model with its patches applied; every patched function restored on exit."""
    module = modeling_module(model)
    saved = {{}}
    try:
        if module is not None and callable(getattr(module, "rms_norm", None)):
            saved["rms_norm"] = module.rms_norm
            module.rms_norm = composite_rms_norm(module.rms_norm)
        yield model
    finally:
        for name, fn in saved.items():
            setattr(module, name, fn)


def _tied_head_loader(base):
    class TiedHeadLoader(base):
        """Converter V2's checkpoint loader, serving a tied lm_head from this export's table."""

        def __call__(self, param_name):
            try:
                return super().__call__(param_name)
            except KeyError:
                if (param_name.endswith("lm_head.weight") and getattr(self, "_tie_word_embeddings", False)
                        and TIED_TABLE in getattr(self, "_weight_map", {{}})):
                    return self._get(TIED_TABLE)
                raise

    TiedHeadLoader.__name__ = TiedHeadLoader.__qualname__ = "TiedHead" + base.__name__
    return TiedHeadLoader


@contextlib.contextmanager
def loader_patched():
    """export_hf's checkpoint loader knowing the tied table's key; restored on exit."""
    original = weights_loader.HFCheckpointWeightsLoader
    if TIED_TABLE is not None:
        weights_loader.HFCheckpointWeightsLoader = _tied_head_loader(original)
    try:
        yield
    finally:
        weights_loader.HFCheckpointWeightsLoader = original


def _causal(base):
    class Causal(base):
        """`base` for a text export of this model: its attention is causal."""

        def _is_text_only_causal_export(self) -> bool:
            task = self.export_config.task
            try:
                task = exportable_module_config.ExportTask(task)
            except ValueError:
                return False
            return task == exportable_module_config.ExportTask.TEXT_GENERATION

    Causal.__name__ = Causal.__qualname__ = "Causal" + base.__name__
    return Causal


@extension.register_model_extension()
class {cls}(extension.ModelExtension):
    model_types = (MODEL_TYPE,)

    @contextlib.contextmanager
    def patch_context(self):
        with loader_patched():
            yield

    @contextlib.contextmanager
    def patch_model(self, model, export_config):
        with patched(model):
            yield

    def get_prefill_decode_exportables(self, model_config, export_config):
        if getattr(export_config, "split_cache", False):
            from litert_torch.generative.export_hf.core.split_cache import exportable_module as split
            pair = (split.LiteRTSplitCacheExportableModuleForDecoderOnlyLMPrefill,
                    split.LiteRTSplitCacheExportableModuleForDecoderOnlyLMGenerate)
        elif getattr(export_config, "externalize_embedder", False):
            from litert_torch.generative.export_hf.core.external_emb import exportable_module as ext
            pair = (ext.LiteRTExportableModuleForDecoderOnlyLMPrefillExternalEmbedder,
                    ext.LiteRTExportableModuleForDecoderOnlyLMGenerateExternalEmbedder)
        else:
            pair = (exportable_module.LiteRTExportableModuleForDecoderOnlyLMPrefill,
                    exportable_module.LiteRTExportableModuleForDecoderOnlyLMGenerate)
        return tuple(_causal(c) for c in pair)

    def build_llm_metadata(self, source_model_artifacts, export_config, exported_model_artifacts, llm_metadata):
        present = {{tuple(t.token_ids.ids) for t in llm_metadata.stop_tokens}}
        for token_id in STOP_TOKEN_IDS:
            if (token_id,) not in present:
                llm_metadata.stop_tokens.add().token_ids.ids.append(token_id)
        return llm_metadata
'''


def _py(value) -> str:
    """A Python literal for a value from the user's source or tokenizer (escaped by repr)."""
    return repr(value)


def module_name(stem: str) -> str:
    return f"shapescript_litert_{stem}"


def extension_source(*, stem: str, model_type: str, source: str, function: str, stop_ids: list,
                     prefill: int, cache: int, tied_table=None) -> str:
    cls = "ShapeScript" + "".join(p[:1].upper() + p[1:] for p in stem.split("_") if p) + "Extension"
    if not cls.isidentifier():
        cls = "ShapeScriptExtension"
    return TEMPLATE.format(module=module_name(stem), prefill=int(prefill), cache=int(cache), source=_py(source),
                           function=_py(function), model_type=_py(model_type),
                           stop_ids=_py(tuple(int(i) for i in stop_ids)), cls=cls,
                           tied_table=_py(None if tied_table is None else str(tied_table)))
