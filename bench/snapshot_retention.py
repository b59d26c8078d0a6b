"""What the object store holds after N shipped versions, with and without retention (docs/updates.md "What the store
keeps"): the bundled sample ingested with the default encoder, then N single-change folds, each shipped by the
updater's `SnapshotShipper` to the stack's own S3 server (`devstack.s3_files`, in this process on 127.0.0.1).
"Without retention" is every version's pushed bytes added up (what the store held before retention existed).

    python bench/snapshot_retention.py [--ships 10] [--keep 3] [--json bench/results/snapshot_retention.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from skbqa.changes.format import parse_change
from skbqa.changes.shipping import SnapshotShipper
from skbqa.changes.updater import IndexUpdater
from skbqa.devstack.s3_files import ObjectServer
from skbqa.ingest.builder import ingest
from skbqa.ingest.object_store import s3_client
from skbqa.models.local_encoder import load_encoder

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "biomed-sample"
BUCKET = "skbqa-snapshots"


def _stored(client: Any) -> int:
    total = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="kb/versions/"):
        total += sum(int(entry["Size"]) for entry in page.get("Contents", []))
    return total


def run(ships: int, keep: int) -> dict[str, Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        os.environ.setdefault(name, value)
    with tempfile.TemporaryDirectory() as work:
        server = ObjectServer(("127.0.0.1", 0), Path(work) / "objects", fsync=False, log_requests=False)
        server.bucket(BUCKET, create=True)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            encoder = load_encoder("onnx-int8")
            index = Path(work) / "index"
            ingest(SAMPLE, index, encoder, progress=False)
            client = s3_client(f"http://127.0.0.1:{server.server_address[1]}")
            shipper = SnapshotShipper(f"s3://{BUCKET}/kb", client=client, keep=keep)
            shipper.ensure(index)
            without = _stored(client)
            prune_s: list[float] = []
            updater = IndexUpdater(index, encoder, mirror=shipper)
            try:
                for n in range(ships - 1):
                    before = _stored(client)
                    node = {"id": 1_000_000 + n, "type": "disease", "name": f"retention probe {n}", "attrs": {}}
                    updater.submit([(1, parse_change({"op": "upsert_node", "node": node}, "bench", 1))], "bench")
                    original = shipper.prune
                    timings: list[float] = []

                    def timed(original: Any = original, timings: list[float] = timings) -> Any:
                        started = time.perf_counter()
                        try:
                            return original()
                        finally:
                            timings.append(time.perf_counter() - started)

                    shipper.prune = timed  # type: ignore[method-assign]
                    updater.snapshot()
                    shipper.prune = original  # type: ignore[method-assign]
                    prune_s.extend(timings)
                    pruned = shipper.last_pruned
                    without += _stored(client) - before + (pruned.bytes if pruned else 0)
            finally:
                updater.close()
            kept = _stored(client)
        finally:
            server.shutdown()
            server.server_close()
    return {
        "ships": ships,
        "keep": keep,
        "bytes_without_retention": without,
        "bytes_kept": kept,
        "ratio": round(without / kept, 2),
        "prune_seconds_p50": round(statistics.median(prune_s), 4) if prune_s else None,
        "prune_seconds_max": round(max(prune_s), 4) if prune_s else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ships", type=int, default=10)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.ships, args.keep)
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
