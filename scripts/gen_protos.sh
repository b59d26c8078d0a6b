#!/usr/bin/env bash
# Regenerate the Python code of protos/skbqa/v1 into services/skbqa/v1 (the one place generated code lives).
# CI runs tests/unit/test_protos.py, which fails when this script would change a committed file.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-services}"
PY="${PYTHON:-.venv/bin/python}"
"$PY" -m grpc_tools.protoc -I protos --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" \
  protos/skbqa/v1/stages.proto protos/skbqa/v1/api.proto
touch "$OUT/skbqa/v1/__init__.py"
