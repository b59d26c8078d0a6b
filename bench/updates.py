"""Live updates: time from acknowledgement to visible, changes applied per second against the encoder's raw speed,
and af latency while changes stream in, against the same server without them (one process, one index copy).

    nice -n 5 .venv/bin/python bench/updates.py --index .skbqa/biomed --questions ../shared/data/biomed-skb/qa-dev.jsonl

Part 1 (embedded, in process): for each batch size, a batch of mixed changes (10 % new nodes, 20 % text edits,
5 % deletions, the rest new edges) is acknowledged (checked + fsync'd to the change log) and folded into a new
snapshot that is opened and warmed, as the server does; the encoder's raw speed is measured on the texts the
fold encoded, in the same process, right after. Part 2 (served): af questions one after another for --seconds,
alone and then while a writer sends --rate changes/s through ApplyChanges; p50/p95 of each and their ratio, how
many versions became visible, and ack → visible through the API for single changes (Ask with min_version).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.changes.format import AddEdge, Change, DeleteNode, UpsertNode
from skbqa.changes.updater import IndexUpdater
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.documents import embedded_texts
from skbqa.skb.qa import load_qa
from skbqa.stores.index import EMBEDDING_SETS, open_index


def mixed_batch(updater: IndexUpdater, size: int, rng: random.Random, next_id: list[int]) -> list[Change]:
    state, schema = updater.state, updater.state.schema
    ids = list(state.nodes)
    deleted: set[int] = set()
    out: list[Change] = []
    for i in range(size):
        share = i / max(size, 1)
        if share < 0.10 or size == 1:
            source = state.nodes[rng.choice(ids)]
            node_type = schema.node_types[source.type].name
            next_id[0] += 1
            out.append(
                UpsertNode(next_id[0], node_type, f"novel {source.name} variant {next_id[0]}", source.text, {})
            )
        elif share < 0.30:
            node_id = rng.choice(ids)
            r = state.nodes[node_id]
            out.append(UpsertNode(node_id, schema.node_types[r.type].name, r.name, r.text + " Revised.", r.attrs))
        elif share < 0.35:
            gone = rng.choice(ids)
            deleted.add(gone)
            out.append(DeleteNode(gone))
        else:
            edge = schema.edge_types[rng.randrange(len(schema.edge_types))]
            sources, targets = (
                [n for n in rng.sample(ids, 200) if n not in deleted and state.nodes[n].type == code]
                for code in (schema.node_code(edge.source), schema.node_code(edge.target))
            )
            if sources and targets:
                out.append(AddEdge(sources[0], edge.name, targets[0]))
    return out


def embedded_part(index: Path, sizes: list[int], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    updater = IndexUpdater(index)
    next_id = [max(updater.state.nodes) + 1000]
    try:
        for size in sizes:
            batch = mixed_batch(updater, size, rng, next_id)
            numbered = list(enumerate(batch, start=1))
            t0 = time.perf_counter()
            version, outcome = updater.submit(numbered, "bench")
            t1 = time.perf_counter()
            report = updater.snapshot()
            assert report is not None
            t2 = time.perf_counter()
            engine = EmbeddedEngine.open(index, encoder=updater.encoder).warm("af", "bm25", "vss", "hybrid")
            t3 = time.perf_counter()
            texts = sum(report.encoded.values())
            raw = _raw_speed(engine, updater, report.encoded)
            fold_s = t2 - t1
            rows.append(
                {
                    "changes": len(batch),
                    "version": version,
                    "outcome": dict(outcome),
                    "ack_ms": round((t1 - t0) * 1000, 2),
                    "fold_s": round(fold_s, 3),
                    "open_and_warm_s": round(t3 - t2, 3),
                    "ack_to_visible_s": round(t3 - t1, 3),
                    "changes_per_s": round(len(batch) / (t3 - t0), 1),
                    "texts_encoded": report.encoded,
                    "fold_seconds": report.seconds,
                    "encoder_raw_texts_per_s": round(raw, 1),
                    "fold_texts_per_s": round(texts / fold_s, 1),
                    "fold_speed_vs_raw_encoder": round(texts / fold_s / raw, 3) if texts else None,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        updater.close()
    return rows


def _raw_speed(engine: EmbeddedEngine, updater: IndexUpdater, encoded: dict[str, int]) -> float:
    """Texts/s of the encoder alone on as many texts of each set as the fold encoded (from the new snapshot)."""
    stores = engine.stores
    texts: list[str] = []
    for name in EMBEDDING_SETS:
        n = min(encoded.get(name, 0), len(stores.nodes))
        picks = np.sort(np.random.default_rng(0).choice(len(stores.nodes), n, replace=False))
        texts += embedded_texts(name, stores.nodes, stores.graph, picks)
    if not texts:
        return float("nan")
    started = time.perf_counter()
    updater.encoder.encode(texts)
    return len(texts) / (time.perf_counter() - started)


def served_part(index: Path, questions: list[str], seconds: float, rate: float, singles: int) -> dict[str, Any]:
    from skbqa.client import SkbqaClient
    from skbqa.serving.run import start_embedded
    from skbqa.serving.settings import ServiceSettings

    server, stop = start_embedded(ServiceSettings(index=index, port=0))
    out: dict[str, Any] = {}
    try:
        with SkbqaClient.connect(f"127.0.0.1:{server.port}", deadline_s=600) as client:
            for q in questions[:5]:
                client.ask(q)  # warm
            out["alone"] = _latencies(client, questions, seconds)
            stop_writer = threading.Event()
            sent: list[int] = []
            writer = threading.Thread(target=_writer, args=(client, index, rate, stop_writer, sent), daemon=True)
            writer.start()
            out["with_changes"] = _latencies(client, questions, seconds)
            stop_writer.set()
            writer.join()
            out["changes_sent"] = sum(sent)
            out["versions_acknowledged"] = len(sent)
            status = client.index_status()
            out["served_version_at_end"] = status.kb_version
            for key in ("p50", "p95"):
                out[f"ratio_{key}"] = round(out["with_changes"][key] / out["alone"][key], 3)
            out["single_change_ack_to_visible_s"] = _singles(client, index, singles)
    finally:
        stop()
    return out


def _latencies(client: Any, questions: list[str], seconds: float) -> dict[str, float]:
    times = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        client.ask(questions[i % len(questions)], strategy="af")
        times.append((time.perf_counter() - started) * 1000)
        i += 1
    times.sort()
    return {
        "n": len(times),
        "p50": round(statistics.median(times), 2),
        "p95": round(times[int(0.95 * (len(times) - 1))], 2),
    }


def _edit(node_id: int, text: str) -> dict[str, Any]:
    return {
        "op": "upsert_node",
        "node": {"id": node_id, "type": "disease", "name": f"streamed {node_id}", "text": text},
    }


def _writer(client: Any, index: Path, rate: float, stop: threading.Event, sent: list[int]) -> None:
    """`rate` changes/s in batches of 5: new disease nodes (each re-embeds its own three texts)."""
    base = 50_000_000
    n = 0
    while not stop.is_set():
        started = time.monotonic()
        batch = [_edit(base + n + i, f"a streamed disease record number {n + i}") for i in range(5)]
        client.apply_changes(batch)
        sent.append(len(batch))
        n += len(batch)
        stop.wait(max(0.0, 5 / rate - (time.monotonic() - started)))


def _singles(client: Any, index: Path, count: int) -> list[float]:
    out = []
    for i in range(count):
        started = time.perf_counter()
        applied = client.apply_changes([_edit(60_000_000 + i, "a single streamed record")])
        client.ask(f"streamed {60_000_000 + i}", strategy="bm25", k=1, min_version=applied.version)
        out.append(round(time.perf_counter() - started, 3))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, default=Path(".skbqa/biomed"))
    parser.add_argument("--questions", type=Path, default=Path("../shared/data/biomed-skb/qa-dev.jsonl"))
    parser.add_argument("--sizes", default="1,100,10000")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--singles", type=int, default=3)
    parser.add_argument("--parts", default="embedded,served")
    parser.add_argument("--out", type=Path, default=Path("bench/results/updates.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.index.parent) as work:
        result: dict[str, Any] = {"index": str(args.index), "nodes": len(open_index(args.index).nodes)}
        if "embedded" in args.parts:
            copy = Path(work) / "embedded"
            shutil.copytree(args.index, copy)
            result["embedded"] = embedded_part(copy, [int(s) for s in args.sizes.split(",")], seed=1)
        if "served" in args.parts:
            copy = Path(work) / "served"
            shutil.copytree(args.index, copy)
            questions = [item.question for item in load_qa(args.questions)]
            result["served"] = served_part(copy, questions, args.seconds, args.rate, args.singles)
            print(json.dumps(result["served"]), flush=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
