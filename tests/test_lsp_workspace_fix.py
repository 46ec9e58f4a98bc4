"""E3306's quick fix rewrites the calls in every file of the workspace folder that
imports the function's file, directly or not, open in the editor or not."""
from __future__ import annotations

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from lsp_support import codes, config, initialize, open_doc, uri_of, wait_version
from support import check
from test_lsp_actions import LIB, MAIN, apply  # the same library and importer

DEEP = """\
import "../main.ss"

fn twice(m: Classifier, x: [b D]) -> [b C]:
    y = classify(x, m=m)
    return x |> classify(m) |> softmax(over=C)
"""

UNRELATED = """\
dim D = 4

fn classify(x: [b D], m: [b D]) -> [b D]:
    return x

fn use(x: [b D]) -> [b D]:
    return classify(x, x)
"""


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def test_the_fix_reaches_importers_that_are_not_open(client: LanguageClient, tmp_path):
    # shapescript.toml marks the project's root: sub/deep.ss may import ../lib.ss (E0213)
    files = {"lib.ss": LIB, "main.ss": MAIN, "sub/deep.ss": DEEP, "unrelated.ss": UNRELATED,
             ".hidden/copy.ss": MAIN, "shapescript.toml": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    await initialize(client, root=str(tmp_path))
    lib = uri_of(tmp_path / "lib.ss")
    open_doc(client, lib, LIB, version=5)  # only lib.ss is open
    p = await wait_version(client, lib, 5)
    assert codes(p) == ["E3306"]
    (action,) = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(lib), range=p.diagnostics[0].range,
        context=T.CodeActionContext(diagnostics=[p.diagnostics[0]])))
    assert action.title == "Make `m` the first parameter" and action.is_preferred
    edits = {dc.text_document.uri: dc for dc in action.edit.document_changes}
    main, deep = uri_of(tmp_path / "main.ss"), uri_of(tmp_path / "sub" / "deep.ss")
    assert set(edits) == {lib, main, deep}  # not the unrelated file, not the hidden folder
    assert edits[lib].text_document.version == 5
    assert edits[main].text_document.version is None and edits[deep].text_document.version is None
    new = {"lib.ss": apply(LIB, edits[lib].edits), "main.ss": apply(MAIN, edits[main].edits),
           "sub/deep.ss": apply(DEEP, edits[deep].edits)}
    assert "fn classify(m: Classifier, x: [b D]) -> [b C]:" in new["lib.ss"]
    assert "    return classify(m, x)\n" in new["main.ss"]
    assert new["sub/deep.ss"] == DEEP.replace("classify(x, m=m)", "classify(m, x)").replace(
        "x |> classify(m) |> softmax", "classify(m, x) |> softmax")  # one rewrite: positional, the model first
    # the fixed files check clean, each as the CLI sees it
    for name, text in new.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for name in new:
        ws, diags = check((tmp_path / name).read_text(), path=str(tmp_path / name))
        assert [d.code for d in diags if d.severity == 1] == [], name
