"""`skbqa topics` against a real Kafka-protocol broker (tansu): the pipeline's seven topics created with a
deployment's partition count, re-running is a no-op, settings that would make every publish fail are refused,
and a broker that cannot add partitions is one line naming the topics."""

from __future__ import annotations

import pytest

from skbqa.bus import topics
from skbqa.cli.main import main

pytestmark = [pytest.mark.kafka]


@pytest.fixture()
def broker():
    from skbqa.devstack.tansu import start_tansu

    with start_tansu() as handle:
        yield handle


def test_topics_are_created_with_the_deployments_partitions(broker, capsys) -> None:
    bus = f"kafka://{broker.bootstrap}"
    assert main(["topics", "--bus", bus, "--partitions", "6", "--min-insync-replicas", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    # the change stream and the version feed keep one partition (their order is the versions' order)
    assert out == [f"{topic}: 6 partitions" for topic in topics.ALL] + [
        f"{topic}: 1 partitions" for topic in topics.SINGLE_PARTITION
    ]
    assert main(["topics", "--bus", bus, "--partitions", "6"]) == 0  # idempotent
    assert capsys.readouterr().out.splitlines() == out
    assert main(["topics", "--bus", bus, "--partitions", "3"]) == 0  # never shrinks
    assert capsys.readouterr().out.splitlines() == out


def test_growing_on_a_broker_without_create_partitions_is_one_clear_line(broker, capsys) -> None:
    bus = f"kafka://{broker.bootstrap}"
    assert main(["topics", "--bus", bus, "--partitions", "2"]) == 0
    capsys.readouterr()
    assert main(["topics", "--bus", bus, "--partitions", "4"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot add partitions" in err and "skbqa.query (2)" in err


def test_settings_that_would_fail_every_publish_are_refused(capsys) -> None:
    argv = ["topics", "--bus", "kafka://127.0.0.1:1", "--partitions", "4", "--replication-factor", "1"]
    assert main([*argv, "--min-insync-replicas", "2"]) == 2
    assert "must be from 1 to the replication factor" in capsys.readouterr().err
    assert main(["topics", "--bus", "memory://", "--partitions", "4"]) == 2
