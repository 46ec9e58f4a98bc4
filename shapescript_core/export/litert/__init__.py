"""The `litert` target: a LiteRT `model.tflite` (and `model.litertlm`) made by LiteRT-Torch's
`export_hf` from the `hf` export, with a generated ModelExtension (see docs/serving-engines.md)."""
