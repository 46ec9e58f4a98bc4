#!/usr/bin/env bash
# Set up .venv and run the whole test suite (conformance cases included).
# Arguments go to pytest: ./test.sh -k hover -x
set -euo pipefail

cd "$(dirname "$0")"
./scripts/setup.sh

exec .venv/bin/python -m pytest -q "$@"
