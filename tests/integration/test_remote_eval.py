"""`skbqa ask|eval --server` and the client SDK against a real `skbqa serve` (embedded): the same metrics, the
same per-question ranks and the same answers as in this process; TLS, mutual TLS and tokens through the SDK;
one-line errors with the CLI's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skbqa.cli.main import main
from skbqa.client import ServerError, SkbqaClient
from skbqa.serving.run import start_embedded
from skbqa.serving.settings import ServiceSettings
from tests.certs import make_certs, mutual_tls_settings
from tests.conftest import SAMPLE_BUNDLE

QA = SAMPLE_BUNDLE / "qa.jsonl"
STRATEGIES = "bm25,vss,hybrid,af"


@pytest.fixture(scope="module")
def server(biomed_sample_engine):
    running, stop = start_embedded(ServiceSettings(index=biomed_sample_engine.stores.directory, port=0))
    yield running
    stop()


def _eval(tmp_path: Path, name: str, *target: str) -> tuple[dict, list[dict]]:
    report, per_question = tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl"
    argv = ["eval", *target, "--qa", str(QA), "--strategy", STRATEGIES, "--json", str(report)]
    assert main([*argv, "--per-question", str(per_question)]) == 0
    lines = [json.loads(line) for line in per_question.read_text().splitlines()]
    return json.loads(report.read_text()), lines


def test_eval_against_the_server_matches_the_in_process_eval(server, biomed_sample_engine, tmp_path) -> None:
    index = str(biomed_sample_engine.stores.directory)
    local, local_lines = _eval(tmp_path, "local", "--index", index)
    remote, remote_lines = _eval(tmp_path, "remote", "--server", f"127.0.0.1:{server.port}", "--concurrency", "3")
    for strategy in STRATEGIES.split(","):
        mine, theirs = local["strategies"][strategy], remote["strategies"][strategy]
        assert theirs["metrics"] == mine["metrics"], strategy
        assert theirs["by_target_type"] == mine["by_target_type"], strategy
        assert theirs["n"] == mine["n"] == 20
        assert theirs["answered_by"] == f"server 127.0.0.1:{server.port}" and theirs["concurrency"] == 3
        assert theirs["throughput_qps"] > 0 and theirs["latency_ms"]["p50"] > 0
    assert remote["ratios"] == {
        s: {**r, "latency_p50": remote["ratios"][s]["latency_p50"]} for s, r in local["ratios"].items()
    }
    key = [(line["strategy"], line["id"], line["first_correct_rank"], line["parsed"]) for line in local_lines]
    assert [
        (line["strategy"], line["id"], line["first_correct_rank"], line["parsed"]) for line in remote_lines
    ] == key


def test_ask_against_the_server_prints_what_the_engine_answers(server, biomed_sample_engine, capsys) -> None:
    question = json.loads(QA.read_text().splitlines()[3])["question"]
    assert main(["ask", "--server", f"127.0.0.1:{server.port}", question, "--k", "5", "--json"]) == 0
    remote = json.loads(capsys.readouterr().out)
    local = biomed_sample_engine.ask(question, strategy="af", k=5)
    assert [i["node_id"] for i in remote["items"]] == [i.node_id for i in local.items]
    assert remote["request_id"] and remote["client_ms"] > 0 and remote["notes"]["parsed"]
    assert main(["ask", "--server", f"127.0.0.1:{server.port}", question, "--k", "2", "--explain"]) == 0
    assert "parsed: answer" in capsys.readouterr().out


def test_cli_errors_are_one_line_with_the_cli_exit_codes(server, capsys, tmp_path) -> None:
    target = f"127.0.0.1:{server.port}"
    cases = [
        (["ask", "--server", target, ""], 2, "INVALID_ARGUMENT: the question is empty"),
        (["ask", "--server", target, "q", "--option", "nonsense=1"], 2, "unknown af option"),
        (["ask", "--server", "not-an-address", "q"], 2, "HOST:PORT"),
        (["ask", "--index", str(tmp_path), "q", "--tls"], 2, "only apply with --server"),
        (["ask", "--server", target, "q", "--llm"], 2, "server's setting"),
        (["eval", "--index", str(tmp_path), "--qa", str(QA), "--concurrency", "2"], 2, "applies with --server"),
        (["ask", "--server", target, "q", "--token-file", str(tmp_path / "none")], 2, "cannot read the token"),
    ]
    for argv, code, message in cases:
        assert main(argv) == code, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, (argv, err)


def test_the_sdk_over_mutual_tls_with_a_token(biomed_sample_engine, tmp_path) -> None:
    certs = make_certs(tmp_path / "certs")
    settings = mutual_tls_settings(
        biomed_sample_engine.stores.directory, certs, tmp_path / "tokens", "team-a-token"
    )
    running, stop = start_embedded(settings)
    question = json.loads(QA.read_text().splitlines()[0])["question"]
    common = {
        "tls_ca": certs.ca,
        "tls_cert": certs.client_cert,
        "tls_key": certs.client_key,
        "server_name": "localhost",
    }
    try:
        with SkbqaClient.connect(f"127.0.0.1:{running.port}", token="team-a-token", **common) as client:
            assert client.health() == "SERVING"
            answer = client.ask(question, k=3)
            assert [i.node_id for i in answer.items] == [
                i.node_id for i in biomed_sample_engine.ask(question, k=3).items
            ]
            assert client.index_status().skb_name == "biomed-sample"
        with SkbqaClient.connect(f"127.0.0.1:{running.port}", token="wrong-token", **common) as client:
            with pytest.raises(ServerError) as caught:
                client.ask(question, k=3)
            assert caught.value.code == "UNAUTHENTICATED" and caught.value.attempts == 1
    finally:
        stop()
