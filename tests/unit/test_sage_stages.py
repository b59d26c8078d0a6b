"""`sage` seeded by `af` in the distributed stages: the parser, symbols and grounding stages run af's steps, the
ranking stage runs steps 6–7 and the SAGE expansion (or, with a reranker, the reranker stage expands right after
step 8), and the final ranking is the embedded strategy's, on the real sample with its SAGE graph."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from skbqa.engine.answers import answer
from skbqa.serving import codec
from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageMessage, StageRuntime
from skbqa.serving.stages.registry import build_stage, run_stage
from skbqa.v1 import api_pb2
from tests.conftest import SAMPLE_BUNDLE
from tests.helpers import sample_with_sage

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runtime(biomed_sample_engine, tmp_path_factory) -> StageRuntime:
    """The sample's SAGE graph, saved beside (not inside) the shared index, and the stage runtime over it."""
    _, own, strategies = sample_with_sage(biomed_sample_engine, tmp_path_factory.mktemp("sage-stages"))
    return StageRuntime(own, biomed_sample_engine.encoder, strategies)


def run_stages(runtime: StageRuntime, question: str, k: int, options: dict[str, Any]) -> tuple[dict, dict]:
    """The five stage cores in sequence (as the bus carries the message); returns the final answer's ids and notes,
    and which stages wrote which step timings."""
    message: StageMessage | None = StageMessage(
        request_id=uuid.uuid4().hex,
        question=question,
        strategy="sage",
        k=k,
        options_json=codec.to_json(options),
        accepted_unix_ms=int(time.time() * 1000),
    )
    steps: dict[str, list[str]] = {}
    final: list[AnswerEnvelope] = []
    for role in ROLES:
        assert message is not None
        before = set(message.timings_ms)
        output = run_stage(build_stage(role, runtime), message)
        final += [a for a in output.answers if a.kind == AnswerEnvelope.FINAL]
        if output.forward is not None:
            steps[role] = sorted(set(output.forward.timings_ms) - before)
        message = output.forward
    assert len(final) == 1
    response = api_pb2.AskResponse.FromString(final[0].answer)
    return {"ids": [i.node_id for i in response.items], "notes": json.loads(response.notes_json)}, steps


def embedded(runtime: StageRuntime, question: str, k: int, options: dict[str, Any]) -> dict:
    result = answer(
        runtime.stores, runtime.strategies, runtime.encoder, question, strategy="sage", k=k, options=options
    )
    return {"ids": [i.node_id for i in result.items], "notes": result.notes}


@pytest.mark.parametrize(
    "options",
    [{}, {"policy": "always"}, {"policy": "always", "seeds": 6, "k_prime": 8, "alpha": 0.3}],
    ids=["edge", "always", "always-options"],
)
def test_sage_over_af_in_the_stages_ranks_as_embedded(runtime, options) -> None:
    expanded = 0
    for question in QUESTIONS[:8]:
        got, steps = run_stages(runtime, question, 20, options)
        want = embedded(runtime, question, 20, options)
        assert got["ids"] == want["ids"], question
        assert got["notes"]["sage"] == want["notes"]["sage"], question
        expanded += bool(got["notes"]["sage"].get("added"))
        # af's steps ran in their own stages, the expansion in the ranking stage
        assert "parse" in steps["parser"] and "fill" in steps["ranking"], steps
        if got["notes"]["sage"].get("expanded"):
            assert "sage_expand" in steps["ranking"], steps
    if options.get("policy") == "always":
        assert expanded, "no question was expanded: the test shows nothing"


def test_with_a_reranker_the_expansion_follows_step_8_in_the_reranker_stage(runtime) -> None:
    options = {"policy": "always", "reranker": "local"}
    for question in QUESTIONS[:4]:
        got, steps = run_stages(runtime, question, 20, options)
        want = embedded(runtime, question, 20, options)
        assert got["ids"] == want["ids"], question
        assert got["notes"]["sage"]["added"] > 0
        assert "sage_expand" not in steps["ranking"], steps  # the reranker stage (no forward) expanded


def test_sage_seeded_by_hybrid_still_runs_whole_in_the_ranking_stage(runtime) -> None:
    options = {"seed": "hybrid"}
    got, steps = run_stages(runtime, QUESTIONS[0], 20, options)
    assert got["ids"] == embedded(runtime, QUESTIONS[0], 20, options)["ids"]
    assert not steps["parser"] and "sage_expand" in steps["ranking"], steps


def test_bad_sage_options_are_refused_by_the_first_stage(runtime) -> None:
    from skbqa.common.errors import InvalidInputError

    message = StageMessage(
        request_id="r", question=QUESTIONS[0], strategy="sage", k=5, options_json='{"seed": "x"}'
    )
    with pytest.raises(InvalidInputError, match="sage seed"):
        run_stage(build_stage("parser", runtime), message)
