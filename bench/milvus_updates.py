"""Live updates with Milvus vectors: seconds the writer spends loading a snapshot's sets into Milvus Lite before
the swap, against the snapshot's own time, in the same process (docs/milvus.md "Following live updates").

    .venv/bin/python bench/milvus_updates.py --out bench/results/milvus_updates.json

The biomed sample (3,043 nodes, three sets) is ingested, loaded into a fresh Milvus Lite file, and brought forward
by three single batches (one node added, one deleted), each folded in process by `IndexUpdater` with
`MilvusVersions`; once with the hashing test encoder (64-d) and once with the default onnx-int8 encoder (384-d).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import SAMPLE_BUNDLE
from tests.helpers import HashingEncoder

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.ingest.builder import ingest
from skbqa.models.local_encoder import load_encoder
from skbqa.query.encoder import Encoder
from skbqa.stores.vectors.milvus_sets import load_vectors_into_milvus
from skbqa.stores.vectors.milvus_versions import MilvusTarget, MilvusVersions

DELETED = (85192, 85361, 85389)  # diseases of the sample


def measure(encoder: Encoder, work: Path) -> dict[str, Any]:
    ingest(SAMPLE_BUNDLE, work / "index", encoder, progress=False)
    uri = str(work / "lite.db")
    started = time.perf_counter()
    load_vectors_into_milvus(work / "index", uri)
    initial = time.perf_counter() - started
    updater = IndexUpdater(work / "index", encoder, mirror=MilvusVersions(MilvusTarget(uri), keep_s=0.0))
    folds = []
    try:
        for version, gone in enumerate(DELETED, start=1):
            node = {"id": 10_000_000 + version, "type": "disease", "name": f"quixotrel {version}", "attrs": {}}
            changes = [
                {"op": "upsert_node", "node": {**node, "text": "a new disease"}},
                {"op": "delete_node", "id": gone},
            ]
            updater.submit([(i, parse_change(c, "bench", i)) for i, c in enumerate(changes, 1)], "bench")
            report = updater.snapshot()
            assert report is not None
            folds.append(
                {"snapshot_s": report.seconds["snapshot_total"], "milvus_load_s": report.seconds["mirror_load"]}
            )
    finally:
        updater.close()
    ratio = statistics.median(f["milvus_load_s"] / f["snapshot_s"] for f in folds)
    return {"initial_load_s": round(initial, 2), "folds": folds, "median_load_over_snapshot": round(ratio, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = {}
    for label, encoder in (("hashing-64", HashingEncoder()), ("onnx-int8-384", load_encoder("onnx-int8"))):
        with tempfile.TemporaryDirectory() as work:
            results[label] = measure(encoder, Path(work))
        print(label, json.dumps(results[label]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
