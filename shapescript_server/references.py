"""References, document highlight, rename (and prepareRename), go to type definition."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import references as ide_refs
from shapescript_core.ide import rename as ide_rename

from . import convert
from .errors import RequestFailed
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    def at(ls, params, answer):
        """The question `read_request` asks about the position of a text document request:
        `answer(path, offset)`, on the core thread."""
        return lambda path: answer(path, convert.offset(ls.lines_for(path), params.position))

    def locations(ls, locs):
        return [convert.location(loc, ls.lines_for, ls.docs.uri_for) for loc in locs] or None

    @read_request(ls, T.TEXT_DOCUMENT_REFERENCES)
    def references(ls: ShapeScriptServer, params: T.ReferenceParams):
        return at(ls, params, lambda path, off: locations(
            ls, ide_refs.references(ls.ws, path, off, params.context.include_declaration)))

    @read_request(ls, T.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def document_highlight(ls: ShapeScriptServer, params: T.DocumentHighlightParams):
        return at(ls, params, lambda path, off: [
            convert.document_highlight(h, ls.lines_for(path)) for h in ide_refs.document_highlight(ls.ws, path, off)
        ] or None)

    @read_request(ls, T.TEXT_DOCUMENT_TYPE_DEFINITION)
    def type_definition(ls: ShapeScriptServer, params: T.TypeDefinitionParams):
        return at(ls, params, lambda path, off: locations(ls, ide_refs.type_definition(ls.ws, path, off)))

    @read_request(ls, T.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: ShapeScriptServer, params: T.PrepareRenameParams):
        def answer(path, off):
            got = ide_rename.prepare_rename(ls.ws, path, off)
            if isinstance(got, str):
                raise RequestFailed(got)
            start, end, name = got
            return T.PrepareRenamePlaceholder(range=convert.range_(ls.lines_for(path), start, end), placeholder=name)

        return at(ls, params, answer)

    @read_request(ls, T.TEXT_DOCUMENT_RENAME)
    def rename(ls: ShapeScriptServer, params: T.RenameParams):
        document_changes = bool(ls.client_supports("workspace.workspace_edit.document_changes", False))

        def answer(path, off):
            result = ide_rename.rename(ls.ws, path, off, params.new_name)
            if result.error:
                raise RequestFailed(result.error)
            return convert.edits_workspace_edit(result.edits, ls.lines_for, ls.docs.uri_for, ls.docs.version,
                                                document_changes)

        return at(ls, params, answer)
