"""The `gguf` target: one `.gguf` file that llama.cpp runs.

The architecture is matched first by `arch/` (no numpy, no gguf: the checker runs the
same match for E3313 as the user types, `serving/gguf.py`), which returns a `GGUFPlan`:
the architecture, its hyperparameters, and for each GGUF tensor the param it comes from
and the layout changes on the way. `writer` (the export) streams the params through those
changes into a GGUF file, with the metadata (`arch/gguf_names.py`) and the tokenizer
(`tokenizer`) llama.cpp needs.
"""
