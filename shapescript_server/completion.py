"""textDocument/completion and textDocument/signatureHelp."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import completion as ide_completion

from . import convert
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    @read_request(ls, T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=["."]))
    def completion(ls: ShapeScriptServer, params: T.CompletionParams):
        fmts = ls.client_supports("text_document.completion.completion_item.documentation_format", None) or []
        markdown = T.MarkupKind.Markdown in fmts

        def answer(path):
            lines = ls.lines_for(path)
            items = ide_completion.completions(ls.ws, path, convert.offset(lines, params.position))
            return T.CompletionList(is_incomplete=False,
                                    items=[convert.completion_item(c, markdown) for c in items])

        return answer

    @read_request(ls, T.TEXT_DOCUMENT_SIGNATURE_HELP,
                  T.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=["="]))
    def signature_help(ls: ShapeScriptServer, params: T.SignatureHelpParams):
        fmts = ls.client_supports(
            "text_document.signature_help.signature_information.documentation_format", None) or []
        markdown = T.MarkupKind.Markdown in fmts

        def answer(path):
            lines = ls.lines_for(path)
            s = ide_completion.signature_help(ls.ws, path, convert.offset(lines, params.position))
            return convert.signature_help(s, markdown) if s is not None else None

        return answer
