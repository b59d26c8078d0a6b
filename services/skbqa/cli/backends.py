"""`skbqa load-milvus` and `skbqa load-nebula`: copy an index's vectors into Milvus and its graph into NebulaGraph,
so the distributed services can serve them (`skbqa serve --vectors …`, `--graph …`)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any


def add_backend_parsers(sub: Any) -> None:
    p = sub.add_parser("load-milvus", help="load an index's embedding sets into Milvus (server or Lite .db)")
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--uri", required=True, help="http://host:19530, or a Milvus Lite path ending in .db")
    p.add_argument(
        "--index-type", default="AUTO", help="AUTO (FLAT below 200k rows, else HNSW), FLAT, HNSW, IVF_FLAT"
    )
    # defaults from the environment, so a Job takes credentials from a Secret without putting them on its command line
    p.add_argument(
        "--token",
        default=os.environ.get("SKBQA_MILVUS_TOKEN", ""),
        help="Milvus token (user:password); default SKBQA_MILVUS_TOKEN",
    )

    p = sub.add_parser("load-nebula", help="create the NebulaGraph schema and bulk-load an index's graph")
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--addr", required=True, help="graphd host:port[,host:port]")
    p.add_argument("--space", required=True)
    p.add_argument("--user", default=os.environ.get("SKBQA_NEBULA_USER", "root"), help="default SKBQA_NEBULA_USER")
    p.add_argument(
        "--password",
        default=os.environ.get("SKBQA_NEBULA_PASSWORD", "nebula"),
        help="default SKBQA_NEBULA_PASSWORD",
    )


def run_load_milvus(args: argparse.Namespace) -> int:
    from skbqa.stores.vectors.milvus_sets import load_vectors_into_milvus

    report = load_vectors_into_milvus(
        args.index, args.uri, index_type=args.index_type, token=args.token, progress=True
    )
    print(json.dumps(report, indent=2))
    return 0


def run_load_nebula(args: argparse.Namespace) -> int:
    from skbqa.stores.graph.nebula_loader import load_index_into_nebula

    addresses = [a.strip() for a in args.addr.split(",") if a.strip()]
    report = load_index_into_nebula(args.index, addresses, args.space, user=args.user, password=args.password)
    print(json.dumps(report, indent=2, default=str))
    return 0


def add_topics_parser(sub: Any) -> None:
    p = sub.add_parser(
        "topics",
        help="create (or grow) the pipeline's Kafka topics with a deployment's partitions and replication",
    )
    p.add_argument("--bus", default=os.environ.get("SKBQA_BUS", ""), help="kafka://host:port (default SKBQA_BUS)")
    p.add_argument(
        "--partitions", type=int, required=True, help="partitions per topic: the most consumers a stage can use"
    )
    p.add_argument("--replication-factor", type=int, default=1)
    p.add_argument(
        "--min-insync-replicas",
        type=int,
        default=None,
        help="replicas that must have a message before the broker acknowledges it (producers use acks=all)",
    )


def run_topics(args: argparse.Namespace) -> int:
    from skbqa.bus import topics
    from skbqa.bus.kafka import KafkaBus, bus_from_url
    from skbqa.common.errors import InvalidInputError

    if not args.bus.startswith("kafka://"):
        raise InvalidInputError("--bus must be kafka://host:port (or set SKBQA_BUS)")
    if args.partitions < 1 or args.replication_factor < 1:
        raise InvalidInputError("--partitions and --replication-factor must be at least 1")
    insync = args.min_insync_replicas
    if insync is not None and not 1 <= insync <= args.replication_factor:
        raise InvalidInputError(
            f"--min-insync-replicas {insync} must be from 1 to the replication factor ({args.replication_factor}): "
            "with acks=all every publish would fail"
        )
    separator = "&" if "?" in args.bus else "?"
    bus = bus_from_url(f"{args.bus}{separator}replication_factor={args.replication_factor}")
    assert isinstance(bus, KafkaBus)
    try:
        configs = {"min.insync.replicas": str(insync)} if insync is not None else None
        counts = bus.provision_topics(topics.ALL, args.partitions, configs=configs)
        # live updates: the change topic's one partition is what orders batches (docs/updates.md)
        counts.update(bus.provision_topics(topics.SINGLE_PARTITION, 1, configs=configs))
    finally:
        bus.close()
    for topic in (*topics.ALL, *topics.SINGLE_PARTITION):
        print(f"{topic}: {counts.get(topic, 0)} partitions")
    return 0
