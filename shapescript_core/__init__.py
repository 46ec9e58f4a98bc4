"""ShapeScript core: syntax, checker, export analysis. Knows nothing of LSP."""
