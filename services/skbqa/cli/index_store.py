"""`skbqa index push|pull`: publish an index to object storage and fetch it onto a pod's own disk
(`skbqa.ingest.object_store`; the chart's `index.delivery: objectStore`)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

WAIT_STEP_S = 5


def add_index_store_parser(sub: Any) -> None:
    p = sub.add_parser("index", help="publish an index to object storage (push) or fetch it (pull)")
    actions = p.add_subparsers(dest="action", required=True)
    endpoint_help = "S3-compatible endpoint, e.g. http://minio:9000 (SKBQA_S3_ENDPOINT_URL; default AWS)"
    push = actions.add_parser("push", help="upload an index: its files, its manifest, then the LATEST pointer")
    push.add_argument("--index", type=Path, required=True)
    push.add_argument("--to", required=True, metavar="s3://BUCKET/PREFIX")
    push.add_argument(
        "--endpoint-url", default=os.environ.get("SKBQA_S3_ENDPOINT_URL") or None, help=endpoint_help
    )
    pull = actions.add_parser("pull", help="fetch the published index (checked, swapped in atomically)")
    pull.add_argument("--from", dest="source", required=True, metavar="s3://BUCKET/PREFIX")
    pull.add_argument("--index", type=Path, required=True)
    pull.add_argument("--version", default=None, help="a published version (default: LATEST)")
    pull.add_argument(
        "--wait",
        action="store_true",
        help="until an index is published, check every 5 s instead of failing (a pod's init container)",
    )
    pull.add_argument(
        "--keep",
        action="store_true",
        help="leave an index already at --index as it is (the live-updates updater's own volume: it holds newer "
        "versions and the change log)",
    )
    pull.add_argument(
        "--endpoint-url", default=os.environ.get("SKBQA_S3_ENDPOINT_URL") or None, help=endpoint_help
    )


def _pull(args: argparse.Namespace) -> Any:
    from skbqa.ingest.object_store import pull_index

    return pull_index(args.source, args.index, endpoint_url=args.endpoint_url, version=args.version)


def _pull_waiting(args: argparse.Namespace) -> Any:
    from skbqa.ingest.object_store import NotPublishedError

    waited = 0
    while True:
        try:
            return _pull(args)
        except NotPublishedError as exc:
            if waited % 60 == 0:
                print(f"waiting: {exc}", flush=True)
        time.sleep(WAIT_STEP_S)
        waited += WAIT_STEP_S


def run_index_store(args: argparse.Namespace) -> int:
    from skbqa.ingest.object_store import push_index

    if args.action == "push":
        report = push_index(args.index, args.to, endpoint_url=args.endpoint_url)
        print(
            f"published {args.index} as version {report.version} to {args.to}: {report.files} files, "
            f"{report.bytes / 2**20:.1f} MiB in {report.seconds:.1f} s"
        )
        return 0
    if args.keep and (args.index / "manifest.json").is_file():
        print(f"{args.index} holds an index already: kept (--keep)")
        return 0
    report = _pull_waiting(args) if args.wait else _pull(args)
    if report.skipped:
        print(f"{args.index} already holds version {report.version}")
    else:
        print(
            f"fetched version {report.version} into {args.index}: {report.files} files, "
            f"{report.bytes / 2**20:.1f} MiB in {report.seconds:.1f} s"
        )
    return 0
