"""The ShapeScript language server: LSP in, the core's plain API, LSP out (pygls 2)."""
