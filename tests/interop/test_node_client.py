"""The public gRPC API (`skbqa.v1.Skbqa` and grpc.health.v1) driven by a non-Python client: Node.js with
@grpc/grpc-js and @grpc/proto-loader reading protos/skbqa/v1/api.proto (tests/interop/node/client.js), against
one `skbqa serve` process with bearer tokens (tests/interop/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from skbqa.v1 import api_pb2
from tests.conftest import SAMPLE_BUNDLE
from tests.interop.conftest import TOKENS, bearer

pytestmark = pytest.mark.interop

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
A, B = bearer(TOKENS[0]), bearer(TOKENS[1])
HEALTH = "grpc.health.v1.Health/Check"
MAX_STATUS_CHARS = 400  # SECURITY.md: no status message the gateway sends is longer


def ids(response: dict) -> list[int]:
    return [int(item["node_id"]) for item in response["items"]]


def ok(result: dict) -> dict:
    assert result["code_name"] == "OK", result
    return result["response"]


def refused(result: dict, code_name: str) -> str:
    assert result["code_name"] == code_name, result
    assert not result["response"]  # no message (a refused stream: no events)
    return str(result["details"])


def test_ask_ranks_the_same_node_ids_as_the_cli(client, interop_server) -> None:
    questions = QUESTIONS[:3]
    cli = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skbqa",
                "ask",
                "--index",
                str(interop_server.index),
                "--k",
                "10",
                "--json",
                question,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for question in questions
    ]
    answers = client.calls(
        *({"call": "Ask", "request": {"question": q, "k": 10}, "metadata": A} for q in questions)
    )
    for question, process, answer in zip(questions, cli, answers, strict=True):
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-2000:]
        expected = [item["node_id"] for item in json.loads(out)["items"]]
        response = ok(answer)
        assert expected and ids(response) == expected, question
        assert response["question"] == question and response["strategy"] == "af" and response["k"] == 10


def test_ask_stream_ends_with_the_answer_ask_gives(client) -> None:
    request = {"question": QUESTIONS[1], "k": 10}
    streamed, asked = client.calls(
        {"call": "AskStream", "request": request, "metadata": A},
        {"call": "Ask", "request": request, "metadata": A},
    )
    events, answer = ok(streamed), ok(asked)
    assert [event["event"] for event in events] == ["partial", "final"]
    assert events[0]["partial"]["partial"] is True and events[1]["final"]["partial"] is False
    final = events[1]["final"]
    assert final["items"] and final["items"] == answer["items"]
    for field in ("question", "strategy", "k", "degraded"):
        assert final[field] == answer[field], field


def test_explain_returns_the_answer_and_its_explanation(client) -> None:
    reply = ok(client.call("Explain", {"ask": {"question": QUESTIONS[2], "k": 3}}, metadata=A))
    assert reply["explanation"].strip() and reply["explanation"].startswith("parsed:")
    assert len(reply["answer"]["items"]) == 3 and reply["answer"]["question"] == QUESTIONS[2]


def test_index_status_describes_the_served_index(client, interop_server, biomed_sample_engine) -> None:
    status = ok(client.call("IndexStatus", metadata=B))
    manifest = json.loads((interop_server.index / "manifest.json").read_text())
    assert status["index"] == interop_server.index.resolve().name  # a name, never the server's path
    assert int(status["nodes"]) == manifest["counts"]["nodes"] == biomed_sample_engine.stores.nodes.ids.size
    assert int(status["edges"]) == manifest["counts"]["edges"] > 0
    assert status["skb_name"] == (manifest["schema_name"] or Path(manifest["bundle"]["path"]).name)
    assert json.loads(status["manifest_json"])["bundle"]["path"] == Path(manifest["bundle"]["path"]).name
    assert status["encoder"] == manifest["encoder"]["name"] and status["encoder"]
    assert json.loads(status["manifest_json"])["counts"] == manifest["counts"]
    assert {"af", "bm25", "vss", "hybrid"} <= set(status["strategies"])


def test_health_check_is_serving_without_a_token(client) -> None:
    for result in client.calls(
        {"call": HEALTH, "request": {"service": ""}}, {"call": HEALTH, "request": {"service": "skbqa.v1.Skbqa"}}
    ):
        assert ok(result)["status"] == "SERVING"


def test_no_token_or_a_wrong_token_is_unauthenticated(client) -> None:
    request = {"question": QUESTIONS[0], "k": 2}
    results = client.calls(
        {"call": "Ask", "request": request},
        {"call": "Ask", "request": request, "metadata": bearer("not-a-token")},
        {"call": "Ask", "request": request, "metadata": {"authorization": TOKENS[0]}},  # no "Bearer "
        {"call": "AskStream", "request": request},
        {"call": "IndexStatus", "metadata": bearer(TOKENS[0] + "x")},
        {"call": "Ask", "request": request, "metadata": A},  # the same channel, with the token: answered
    )
    for result in results[:-1]:
        refused(result, "UNAUTHENTICATED")
    assert len(ok(results[-1])["items"]) == 2


def test_two_authorization_headers_are_unauthenticated(client) -> None:
    """grpc-js and node:http2 refuse to send `authorization` twice; client.js puts such headers on the wire
    itself (`wire_metadata`). The control — one valid header by the same path — is answered."""
    request = {"question": QUESTIONS[0], "k": 2}
    one = [("authorization", A["authorization"])]
    assert len(ok(client.call("Ask", request, wire_metadata=one))["items"]) == 2
    for headers in ([*one, ("authorization", B["authorization"])], [*one, *one]):
        refused(client.call("Ask", request, wire_metadata=headers), "UNAUTHENTICATED")
        refused(client.call("IndexStatus", wire_metadata=headers), "UNAUTHENTICATED")


def test_megabyte_strategy_name_is_a_short_invalid_argument_and_the_channel_lives(client) -> None:
    bad, health = client.calls(
        {"call": "Ask", "request": {"question": QUESTIONS[0], "strategy": "x" * 1_000_000}, "metadata": A},
        {"call": HEALTH, "request": {}, "deadline_ms": 2000},
    )
    details = refused(bad, "INVALID_ARGUMENT")
    assert details.startswith("unknown strategy") and len(details) <= MAX_STATUS_CHARS, details[:500]
    assert ok(health)["status"] == "SERVING" and health["elapsed_ms"] < 2000


def test_malformed_request_bytes_are_invalid_argument(client) -> None:
    valid = api_pb2.AskRequest(question=QUESTIONS[0], k=2).SerializeToString().hex()
    not_utf8 = "0a02fffe"  # field 1 (question), 2 bytes that are not UTF-8
    good, garbage, bad_text = client.calls(
        {"call": "Ask", "raw_hex": valid, "metadata": A},  # control: the raw path sends what it is given
        {"call": "Ask", "raw_hex": bytes([0xFF, 0xFF, 0xFF]).hex(), "metadata": A},
        {"call": "Ask", "raw_hex": not_utf8, "metadata": A},
    )
    assert len(ok(good)["items"]) == 2
    for result in (garbage, bad_text):
        details = refused(result, "INVALID_ARGUMENT")
        assert "not a valid skbqa.v1.AskRequest" in details and len(details) <= MAX_STATUS_CHARS


def test_a_request_id_reused_by_another_token_gets_that_callers_own_answer(client) -> None:
    """Replay is keyed by (client, request_id): token B reusing token A's id is another key — B is answered its
    own question, never A's; only A itself reusing the id for a different request is ALREADY_EXISTS."""
    shared = f"interop-{uuid.uuid4().hex}"
    first_q, second_q = QUESTIONS[3], QUESTIONS[4]
    first, second, fresh, replay, reuse = client.calls(
        {"call": "Ask", "request": {"question": first_q, "k": 5, "request_id": shared}, "metadata": A},
        {"call": "Ask", "request": {"question": second_q, "k": 5, "request_id": shared}, "metadata": B},
        {"call": "Ask", "request": {"question": second_q, "k": 5}, "metadata": B},
        {"call": "Ask", "request": {"question": first_q, "k": 5, "request_id": shared}, "metadata": A},
        {"call": "Ask", "request": {"question": second_q, "k": 5, "request_id": shared}, "metadata": A},
    )
    a, b, b_fresh = ok(first), ok(second), ok(fresh)
    assert ids(a) != ids(b_fresh)  # the two questions have different answers, so a leak would show
    assert b["question"] == second_q and b["request_id"] == shared and ids(b) == ids(b_fresh)
    assert first_q not in json.dumps(b)
    assert ok(replay) == a  # A's retry is A's kept answer
    assert "already used by this client" in refused(reuse, "ALREADY_EXISTS")


def test_one_millisecond_deadline_is_deadline_exceeded(client) -> None:
    request = {"question": QUESTIONS[5], "k": 1000}
    local, after = client.calls(
        {"call": "Ask", "request": request, "metadata": A, "deadline_ms": 1},
        {"call": "Ask", "request": {"question": QUESTIONS[5], "k": 2}, "metadata": A, "deadline_ms": 60000},
    )
    refused(local, "DEADLINE_EXCEEDED")
    assert len(ok(after)["items"]) == 2  # the channel still answers
    # grpc-js may give up before sending; over the wire path the 1 ms goes out as grpc-timeout and the status is
    # the server's own
    server = client.call("Ask", request, wire_metadata=[("authorization", A["authorization"])], deadline_ms=1)
    assert not refused(server, "DEADLINE_EXCEEDED").startswith("client:")
