"""The GGUF format's names, in one place: `names` maps our roles (arch/roles.py) onto
gguf-py's tensor names (`MODEL_TENSOR`, `blk.0.attn_output.weight`) and back, and names
the metadata keys llama.cpp reads. The GGUF writer (export/gguf/) and the importer
(weights/: a `.gguf` read by role, a Hugging Face checkpoint named through gguf-py's
`TensorNameMap`) both read it; nothing else speaks gguf-py's names.

Below the importer and the writers, above `arch` (layers: docs/architecture.md). gguf-py
is loaded only with this package (the export's extra), never on the checker's path.
"""
