"""Faults of the distributed stack, with real processes (tansu on durable s3rver storage, Triton, one process per
service): kill -9 of any stage worker, a broker restart mid-stream, a poison message, the encoder server lost.

Each test sends requests while the fault happens and checks that every accepted request is answered (correctly:
the embedded engine's ranking) or ends with a clear status — none is lost, none hangs.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tests.integration.fault_stack import QUESTIONS, check, durable_stack, embedded_rankings, storm

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.triton,
    pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("npx") is None, reason="the durable broker needs npx (s3rver)"),
]


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory):
    running = durable_stack(biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("fault-stack"))
    yield running
    running.down()


@pytest.fixture(scope="module")
def expected(biomed_sample_engine):
    return embedded_rankings(biomed_sample_engine)


@pytest.mark.parametrize("role", ["parser", "symbols", "grounding", "ranking", "reranker"])
def test_kill_9_of_a_stage_worker_loses_no_request(stack, expected, role) -> None:
    def fault() -> None:
        stack.kill(f"{role}-0")  # SIGKILL: no clean shutdown, its uncommitted requests stay on the topic
        time.sleep(1.0)
        stack.start_service(role, 0)  # the restarted replica's group resumes from the last commit

    questions = QUESTIONS[:16]
    result = storm(stack, fault, questions)
    check(result, questions, expected, f"kill -9 {role} worker, restarted", "all answered by the restarted one")
    assert not result["statuses"], result["statuses"]  # an accepted request must be answered, not refused
