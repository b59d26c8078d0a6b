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
