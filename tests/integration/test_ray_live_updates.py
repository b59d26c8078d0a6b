"""An embedded server whose reranker runs on a real local Ray Serve (`ray_address="local"`) takes a change batch,
and its reranked `af` answers at the new version equal the in-process answers on the final index: answered in
process (flagged degraded) until the Ray replica has opened the new version, on Ray after, never on the replica's
old data. The 44-node index of `test_ray_reranker.py`, built here with the real encoder.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from skbqa.client import SkbqaClient
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.serving import run
from skbqa.serving.settings import ServiceSettings
from tests.integration.test_ray_reranker import QUESTIONS, TOPICS, _bundle

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

OPTIONS = {"reranker": "local"}
K = 10
RAY_START_S = 240.0  # a private Ray's start and the app's deploy: 5–120 s on a busy 2-core machine
REOPEN_S = 60.0


def _changes() -> list[dict[str, Any]]:
    """The papers of the first and fifth topics swap their texts, and an author comes before every node (so
    every position moves): a replica reading its old snapshot would rerank on other texts and vectors."""
    (_, first), (_, fifth) = TOPICS[0], TOPICS[4]
    out: list[dict[str, Any]] = [
        {
            "op": "upsert_node",
            "node": {"id": 1, "type": "author", "name": "Emmy Noether", "attrs": {}, "text": "x"},
        }
    ]
    for t, text in ((0, fifth), (4, first)):
        for v in range(4):
            title = f"{TOPICS[t][0].capitalize()}, part {v + 1}"
            node = {
                "id": 1000 + 10 * t + v,
                "type": "paper",
                "name": title,
                "attrs": {"year": 2015 + v},
                "text": text,
            }
            out.append({"op": "upsert_node", "node": node})
    return out


def _items(answer: Any) -> list[tuple[int, float]]:
    return [(item.node_id, round(item.score, 5)) for item in answer.items]


@pytest.fixture
def index(tmp_path: Path, onnx_encoder: Any) -> Path:
    ingest(_bundle(tmp_path / "bundle"), tmp_path / "built", onnx_encoder, progress=False)
    shutil.copytree(tmp_path / "built", tmp_path / "index")
    return tmp_path / "index"


def _expected(index: Path, encoder: Any) -> dict[str, list[tuple[int, float]]]:
    engine = EmbeddedEngine.open(index, encoder=encoder)
    return {q: _items(engine.ask(q, strategy="af", k=K, options=OPTIONS)) for q in QUESTIONS}


def test_an_embedded_server_on_ray_follows_a_change_batch(index: Path, onnx_encoder: Any, tmp_path: Path) -> None:
    pytest.importorskip("ray.serve")
    before = _expected(index, onnx_encoder)
    settings = ServiceSettings(index=index, host="127.0.0.1", port=0, ray_address="local")
    server, stop = run.start_embedded(settings)
    try:
        with SkbqaClient.connect(f"127.0.0.1:{server.port}", deadline_s=60) as client:

            def ask(question: str, version: int = 0) -> Any:
                return client.ask(question, strategy="af", k=K, options=OPTIONS, min_version=version)

            started = time.monotonic()
            while ask(QUESTIONS[0]).degraded:  # in process until Ray is attached
                assert time.monotonic() - started < RAY_START_S, "Ray never attached"
                time.sleep(1.0)
            for question in QUESTIONS:  # on Ray at version 0: the in-process answers
                answer = ask(question)
                assert not answer.degraded and answer.kb_version == 0
                assert _items(answer) == before[question], question

            applied = client.apply_changes(_changes())
            assert applied.version == 1
            answers = {question: ask(question, 1) for question in QUESTIONS}  # the first waits for the fold
            after = _expected(index, onnx_encoder)  # the final index, in process
            paths = []
            for question, answer in answers.items():  # whichever path answers: never the replica's version 0
                assert answer.kb_version == 1 and _items(answer) == after[question], question
                paths.append(answer.degraded)
            assert sum(after[q] != before[q] for q in QUESTIONS) >= 2  # the change moves these answers
            assert paths[0], "the replica cannot have had version 1 at its first request"
            reopened = time.monotonic()
            while ask(QUESTIONS[0], 1).degraded:  # until the replica has opened version 1
                assert time.monotonic() - reopened < REOPEN_S, "the Ray replica never opened version 1"
                time.sleep(0.5)
            for question in QUESTIONS:  # on Ray at version 1
                answer = ask(question, 1)
                assert not answer.degraded and answer.kb_version == 1
                assert _items(answer) == after[question], question
    finally:
        stop()
        run._stop_ray()
