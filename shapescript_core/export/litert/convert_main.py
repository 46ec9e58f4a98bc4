"""The conversion step of `shapescript export --litert`, run by the LiteRT environment's python.

Standalone on purpose: it imports only the standard library, torch, transformers and
litert_torch (none of them is in the project's own environment), and never the project.
Usage: `python convert_main.py ARGS.json`, ARGS holding:

    model               the `hf` export directory (a trust_remote_code checkpoint)
    output_dir          where export_hf writes (model.tflite, model.litertlm, ...)
    extension_dir       the folder holding the generated extension module
    extension_module    its module name (export_hf imports it by name)
    prefill_length, cache_length, quantization_recipe ("none" or a recipe), bundle (bool),
    split_cache (bool: export_hf's split-cache mode)

It prints `shapescript-litert: <step>` lines as it goes, and exits 0 when export_hf is done.
"""
import json
import os
import sys
import time

PREFIX = "shapescript-litert: "


def say(message: str):
    print(PREFIX + message, flush=True)


def _without_tokenizer(model_dir: str):
    """export_hf loads a tokenizer even when it bundles nothing (and fails, asking for
    sentencepiece, when there is none). Without one, the .tflite alone is made: the
    tokenizer is None for this model and the tokenizer step does nothing."""
    import transformers
    from litert_torch.generative.export_hf.core import export_lib

    original = transformers.AutoTokenizer.from_pretrained

    class NoTokenizer(transformers.AutoTokenizer):
        @classmethod
        def from_pretrained(cls, path, *args, **kwargs):
            if os.path.abspath(str(path)) == os.path.abspath(model_dir):
                return None
            return original(path, *args, **kwargs)

    transformers.AutoTokenizer = NoTokenizer
    export_lib.export_tokenizer = lambda source, config, exported: exported


def main(argv) -> int:
    with open(argv[1], encoding="utf-8") as fh:
        args = json.load(fh)
    sys.path.insert(0, args["extension_dir"])
    start = time.monotonic()
    say("loading LiteRT-Torch")
    from litert_torch.generative.export_hf import export
    if not args["bundle"]:
        _without_tokenizer(args["model"])
    say("converting the model (prefill and decode signatures)")
    # Every option is given: export_hf drops None arguments and keeps its own defaults
    # (int8 weights, no prefill logits, prefill 128, cache 4096, the .tflite only inside
    # the .litertlm).
    export.export(
        model=args["model"],
        output_dir=args["output_dir"],
        trust_remote_code=True,
        extension_modules=[args["extension_module"]],
        prefill_lengths=[int(args["prefill_length"])],
        cache_length=int(args["cache_length"]),
        quantization_recipe=args["quantization_recipe"],
        prefill_logits=True,
        keep_temporary_files=True,
        bundle_litert_lm=bool(args["bundle"]),
        split_cache=bool(args.get("split_cache", False)),
    )
    say(f"done in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
