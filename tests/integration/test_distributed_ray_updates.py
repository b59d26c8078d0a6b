"""Live updates in the distributed form with the reranker on Ray Serve (what `skbqa stack up` runs by default): a
real local stack (tansu broker, one process per stage, the updater, `--ray-address local` in the reranker
service) takes a change batch, and its reranked `af` answers at the new version equal the in-process engine's on
the final index — answered in process, flagged degraded, until the Ray replica has opened the version, on Ray
after."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from skbqa.client import SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.engine.embedded import EmbeddedEngine
from tests.integration.test_distributed_updates import stack_over_a_copy

pytestmark = [pytest.mark.distributed, pytest.mark.kafka, pytest.mark.ray, pytest.mark.slow]
pytestmark += [pytest.mark.timeout(900)]

SAMPLE_QA = Path(__file__).resolve().parents[2] / "data" / "biomed-sample" / "qa.jsonl"
OPTIONS = {"reranker": "local"}
K = 10
NEW_ID = 10_000_001
NEW_NAME = "zorblaxic fever syndrome"
RAY_START_S = 240.0
REOPEN_S = 90.0


def _questions() -> list[str]:
    lines = SAMPLE_QA.read_text().splitlines()[:4]
    return [NEW_NAME, *(json.loads(line)["question"] for line in lines)]


def _items(answer: Any) -> list[tuple[int, float]]:
    return [(item.node_id, round(item.score, 5)) for item in answer.items]


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory):
    directory: Path = tmp_path_factory.mktemp("ray-updates-stack")
    with stack_over_a_copy(biomed_sample_engine.stores.directory, directory, ray=True) as running:
        yield running


def test_a_stack_reranking_on_ray_takes_changes_and_never_mixes_versions(stack, onnx_encoder) -> None:
    takes_changes_on_ray(stack, onnx_encoder)


def takes_changes_on_ray(stack: Any, onnx_encoder: Any) -> None:
    """A batch through the gateway; af answers at its version equal the embedded engine's on the updater's final
    index, in process (degraded) until the Ray replica holds the version, then on Ray (also with shipped
    snapshots, tests/integration/test_stack_snapshots_ray.py)."""
    index = stack.options.index
    questions = _questions()
    with SkbqaClient.connect(f"127.0.0.1:{stack.ports['gateway']}", deadline_s=60) as client:

        def ask(question: str, version: int = 0) -> Any:
            return client.ask(question, strategy="af", k=K, options=OPTIONS, min_version=version)

        started = time.monotonic()
        while ask(questions[1]).degraded:  # in process until the reranker service has attached its Ray
            assert time.monotonic() - started < RAY_START_S, "Ray never attached"
            time.sleep(2.0)

        changes = [
            {
                "op": "upsert_node",
                "node": {
                    "id": NEW_ID,
                    "type": "disease",
                    "name": NEW_NAME,
                    "attrs": {},
                    "text": f"{NEW_NAME} is a rare inherited disorder with recurrent fevers and joint pain.",
                },
            },
            {"op": "delete_node", "id": 13},
        ]
        deadline = time.monotonic() + 60
        while True:
            try:
                applied = client.apply_changes(changes)  # refused until the gateway hears the updater
                break
            except ServerError as exc:
                if exc.code != "FAILED_PRECONDITION" or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert applied.version == 1

        answers = {q: ask(q, 1) for q in questions}
        engine = EmbeddedEngine.open(index, encoder=onnx_encoder)  # the final index, in process
        expected = {q: _items(engine.ask(q, strategy="af", k=K, options=OPTIONS)) for q in questions}
        assert expected[NEW_NAME][0][0] == NEW_ID
        for question, answer in answers.items():
            assert answer.kb_version == 1 and _items(answer) == expected[question], question

        reopened = time.monotonic()
        while ask(questions[1], 1).degraded:  # until the Ray replica has opened version 1
            assert time.monotonic() - reopened < REOPEN_S, "the Ray replica never opened version 1"
            time.sleep(0.5)
        for question in questions:
            answer = ask(question, 1)
            assert not answer.degraded and answer.kb_version == 1
            assert _items(answer) == expected[question], question
