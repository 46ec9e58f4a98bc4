"""IDE features over the workspace, in plain data: offsets, strings, paths.

Nothing here knows the editor protocol. Every query takes a `Workspace`, a file path and
code-point offsets into that file's text, and returns small dataclasses (or None); the
language server converts them to LSP. Like the rest of the core, no query raises on any
text: a position outside everything gives an empty answer.

    hover.hover(ws, path, offset)                  -> Hover | None
    inlay.inlay_hints(ws, path, start, end)        -> [InlayHint]
    navigation.definition(ws, path, offset)        -> [Location]
    navigation.document_symbols(ws, path)          -> [Symbol]
    navigation.workspace_symbols(ws, query)        -> [WorkspaceSymbol]
    references.references / document_highlight / type_definition; rename.prepare_rename / rename
    format.format_text(text) / format_edits(text, range)  (text only: no workspace)
    structure.folding_ranges(ws, path)             -> [Fold]
    structure.selection_ranges(ws, path, offsets)  -> [[(start, end)]]
    calls.prepare / incoming / outgoing            -> [CallItem] / [Call]
    completion.completions(ws, path, offset)       -> [Completion]
    completion.signature_help(ws, path, offset)    -> SignatureHelp | None
    lens.export_lenses(ws, path)                   -> [ExportLens]
    semantic_tokens.semantic_tokens(ws, path)      -> [Token]

The settings (`shapescript.toml`, the editor's) are `shapescript_core.settings`.
"""
