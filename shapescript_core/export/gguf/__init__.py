"""The `gguf` target: one `.gguf` file that llama.cpp runs.

llama.cpp runs only the architectures it knows, so the export has two halves:
- `match` (no numpy, no gguf: the checker runs it for E3313 as the user types) matches the
  exported function's op graph against the supported architectures (`archs`) and returns
  a `GGUFPlan`: the architecture, its hyperparameters, and for each GGUF tensor the param it
  comes from and the layout changes on the way (`plan`);
- `writer` (the export) streams the params through those changes into a GGUF file, with
  the metadata (`metadata`) and the tokenizer (`tokenizer`) llama.cpp needs.
"""
