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
