"""The export backend, re-exported from where it lives now: `export/run.py`
(run_export, ExportResult), `export/request.py` (ExportRequest, make_request) and
`export/writers.py` (the targets)."""
from __future__ import annotations

from .export.request import ExportRequest, RequestError, make_request  # noqa: F401
from .export.run import ExportResult, run_export  # noqa: F401
from .export.writers import TARGETS  # noqa: F401
