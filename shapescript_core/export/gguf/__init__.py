"""The `gguf` target: one `.gguf` file that llama.cpp runs.

The architecture is matched first by `arch/` (no numpy, no gguf: the checker runs the
same match for E3313 as the user types, `serving/e3313_gguf.py`), which returns a `GGUFPlan`:
the architecture, its hyperparameters, and for each GGUF tensor the param it comes from
and the layout changes on the way. `writer` (the export) streams the params through those
changes into a GGUF file, with the tensor names and metadata of the GGUF format
(`gguf_format/names.py`: each role's GGUF name, the metadata keys) and the tokenizer
(`tokenizer`) llama.cpp needs.
"""
