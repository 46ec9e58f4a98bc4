"""Every error page's erroneous example raises its code, and its fixed example checks clean."""
import glob
import os
import re

import pytest

from shapescript_core.diagnostics import Severity
from shapescript_core.workspace import Workspace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "errors", "*.md")))
FENCE = re.compile(r"```shapescript\n(.*?)```", re.S)
EXPORT_TIME = {"E3310", "E3311", "E3312", "E3314", "E3315", "E3316", "E3317", "E3318"}  # raised by the writers, not the checker (E3313 is both)
MULTI_FILE = {"E0209", "E0210", "E0213", "E0214"}  # their examples span several files: see test_incremental,
# test_security_imports
INTERNAL = {"E0001"}  # no program raises it: see test_deep_programs (an injected fault)
SPLIT = {"E3307"}  # checked only when vLLM's ranks are set: see test_tensor_parallel


def _codes(src: str, severity=None) -> list:
    ws = Workspace()
    ws.set_text("/tmp/shapescript-docs/page.ss", src)
    return [d.code for d in ws.diagnostics("/tmp/shapescript-docs/page.ss")
            if severity is None or d.severity == severity]


@pytest.mark.parametrize("page", [p for p in PAGES if os.path.basename(p)[:5] not in EXPORT_TIME | MULTI_FILE | INTERNAL | SPLIT],
                         ids=lambda p: os.path.basename(p)[:5])
def test_error_page_examples(page):
    code = os.path.basename(page)[:5]
    text = open(page, encoding="utf-8").read()
    assert text.startswith(f"# {code}: ")
    blocks = FENCE.findall(text)
    assert len(blocks) >= 2, "an erroneous example and its fix"
    if code.startswith("E33"):
        assert "[Serving engines](../serving-engines.md)" in text
    sev = Severity.WARNING if code.startswith("W") else Severity.ERROR
    assert code in _codes(blocks[0], sev)
    assert [c for c in _codes(blocks[-1], sev) if c == code] == []
    assert _codes(blocks[-1], Severity.ERROR) == []


@pytest.mark.parametrize("code", ["E0408", "E0101", "W0101", "E3304", "E3306", "E3311"])
def test_doc_links_open_real_pages(code):
    from urllib.parse import urlparse
    from urllib.request import url2pathname
    from shapescript_core.diagnostics import doc_url
    url = urlparse(doc_url(code))
    assert url.scheme == "file"
    page = url2pathname(url.path)
    assert os.path.exists(page)
    if url.fragment:
        assert f'id="{url.fragment}"' in open(page, encoding="utf-8").read()
