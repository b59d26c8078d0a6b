"""`StackOptions` refuses bad settings before anything starts; `bus_options` reach every service's bus URL."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kafka")

from skbqa.common.errors import InvalidInputError
from skbqa.devstack.stack import LocalStack, StackOptions


@pytest.fixture
def index(tmp_path: Path) -> Path:
    (tmp_path / "manifest.json").write_text("{}")
    return tmp_path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"replicas": {"parsr": 2}}, "unknown role 'parsr'"),
        ({"replicas": {"ranking": 9}}, "replicas of ranking must be 1..8"),
        ({"bus_options": "fetch_wait=20"}, "unknown option 'fetch_wait'"),
        ({"bus_options": "fetch_max_wait_ms=soon"}, "fetch_max_wait_ms='soon' is not a int"),
        ({"colocate": ("parser+grounding",)}, "consecutive and in pipeline order"),
        ({"colocate": ("parser+symbols", "symbols+grounding")}, "in two co-located groups"),
        ({"colocate": ("parser+symbols",), "replicas": {"symbols": 2}}, "set --replicas parser\\+symbols=2"),
    ],
)
def test_bad_settings_are_refused_before_anything_starts(index: Path, changes: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        LocalStack(StackOptions(index=index, directory=index / "stack", **changes))


def test_a_directory_without_an_index_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="is not an skbqa index"):
        StackOptions(index=tmp_path).validate()


@pytest.mark.parametrize(
    ("options", "url"),
    [("", "kafka://127.0.0.1:9"), ("?fetch_max_wait_ms=100", "kafka://127.0.0.1:9?fetch_max_wait_ms=100")],
)
def test_bus_options_become_the_services_bus_url_query(index: Path, options: str, url: str) -> None:
    stack = LocalStack(StackOptions(index=index, directory=index / "stack", bus_options=options))
    stack.ports["bus"] = "kafka://127.0.0.1:9"
    assert stack.bus_url == url


def test_a_colocated_group_is_one_service_and_the_gateway_is_told(index: Path, monkeypatch) -> None:
    options = StackOptions(
        index=index,
        directory=index / "stack",
        colocate=("parser+symbols+grounding", "ranking+reranker"),
        replicas={"ranking+reranker": 2},
    )
    assert options.service_roles == ("gateway", "parser+symbols+grounding", "ranking+reranker", "updater")
    stack = LocalStack(options)
    stack.directory.mkdir()  # where the state is saved
    stack.ports["bus"] = "kafka://127.0.0.1:9"
    started: dict[str, list[str]] = {}
    monkeypatch.setattr(stack, "_start", lambda name, argv, ports, env=None: started.__setitem__(name, argv))
    stack.start_service("gateway", wait=False)
    stack.start_service("ranking+reranker", 1, wait=False)
    gateway = started["gateway-0"]
    assert gateway[gateway.index("--colocated") :].count("--colocated") == 2
    assert "ranking+reranker" in gateway and "parser+symbols+grounding" in gateway
    group = started["ranking+reranker-1"]
    assert group[group.index("--role") + 1] == "ranking+reranker"
    assert group[group.index("--ray-address") + 1] == "local"  # the reranker inside it keeps Ray Serve


def test_every_gateway_replica_is_given_to_clients(index: Path, monkeypatch) -> None:
    stack = LocalStack(
        StackOptions(index=index, directory=index / "stack", gateway_port=0, replicas={"gateway": 2})
    )
    stack.directory.mkdir()
    stack.ports["bus"] = "kafka://127.0.0.1:9"
    ports: dict[str, int] = {}
    monkeypatch.setattr(stack, "_start", lambda name, argv, p, env=None: ports.__setitem__(name, p["grpc"]))
    stack.start_service("gateway", 0, wait=False)
    stack.start_service("gateway", 1, wait=False)
    assert ports["gateway-0"] != ports["gateway-1"]  # no clash: the second takes a free port
    expected = f"127.0.0.1:{ports['gateway-0']},127.0.0.1:{ports['gateway-1']}"
    assert stack.ports["gateways"] == expected  # what `stack up` prints and the state file records
