#!/usr/bin/env bash
# Set up .venv with the project installed in editable mode, test extras included.
# Idempotent: the install is skipped while pyproject.toml is unchanged since the last one.
set -euo pipefail

cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    python3 -m venv .venv
fi

hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
stamp=".venv/.installed-$hash"

if [ ! -e "$stamp" ]; then
    echo "setup: installing the project into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip \
        || echo "setup: warning: could not upgrade pip, going on with the one there" >&2
    .venv/bin/pip install -q -e '.[test]'
    rm -f .venv/.installed-*
    touch "$stamp"
fi
