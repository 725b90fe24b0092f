#!/usr/bin/env bash
# Lint and type-check (run before committing): ruff and mypy on the project's code.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
"$PY" -m ruff check flowbuilder nodes tests benchmarks
"$PY" -m ruff format --check flowbuilder nodes tests benchmarks
"$PY" -m mypy  # packages from pyproject: flowbuilder, with flowbuilder.nodes
