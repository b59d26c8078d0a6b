"""Scale benchmark: one synthetic SKB size per process, from bundle to answers, with ratios measured in the run.

    nice -n 19 .venv/bin/python bench/scale.py --nodes 1000000 --work /tmp/skbqa-scale --out bench/results

Steps (figures land in OUT/scale-<nodes>.json, a markdown summary is printed):
1. bundle: `skbqa synth --nodes N --avg-degree 40 --vectors` (≈ 20 edges per node, STaRK-MAG-like density) with
   precomputed vectors from the static encoder (`models.static_encoder`); a child process (own peak RSS).
2. graph load: edges.jsonl.gz → validated positions → CSR, timed in a child process: edges per second.
3. ingest: `skbqa ingest --precomputed-vectors` in a child process: stage times, peak RSS, index bytes.
4. serving, in this process: open and warm (time, RSS per store), then every question with vss (the baseline),
   bm25, hybrid and af at k = 20: p50/p95 per strategy and per step, metrics, ratios vs vss.
5. grounding: af with l_max ∈ {10, 25, 100, 400}: ground time by number of triplets, scope iterations.
6. ANN: recall@20 of the question vectors against the exact scan, unfiltered and filtered to the answer type, for
   several nprobe values, with the search time of each.
7. encoders: the static encoder's throughput (from the vectors manifest) and MiniLM's (ONNX int8, this machine)
   on a sample of the same documents: the time MiniLM would need for all 3·N texts.
8. profile (--profile): pyinstrument over the af questions; the tree and the top frames by own time are saved.

Children are timed with os.wait4, so each peak RSS is that process's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

STRATEGIES = ("vss", "bm25", "hybrid", "af")
L_MAX = (10, 25, 100, 400)
NPROBES = (16, 32, 64, 128)
ENCODER_SAMPLE = 600  # texts per set MiniLM encodes to measure its throughput


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(cmd: list[str]) -> dict[str, float]:
    """Run a command; its wall time and its own peak RSS (os.wait4 reports that child's rusage)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode}")
    return {"seconds": round(time.perf_counter() - started, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def skbqa(*args: str) -> list[str]:
    return [sys.executable, "-m", "skbqa.cli.main", *args]


# ------------------------------------------------------------------------------------------------ child: graph


def graph_load(bundle: Path) -> None:
    """Child process: time the bundle's edges from file to CSR (nodes are loaded first, untimed)."""
    from skbqa.skb import bundle as bundle_module
    from skbqa.skb.jsonl import find_jsonl
    from skbqa.stores.graph.csr import CsrGraph

    skb = bundle_module.load_bundle(bundle)
    path = find_jsonl(bundle, "edges")
    started = time.perf_counter()
    src, dst, etype = bundle_module._read_edges(path, skb)
    parsed = time.perf_counter()
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, src, dst, etype)
    built = time.perf_counter()
    edges = int(src.size)
    arrays = sum(a.nbytes for a in graph._arrays.values())
    print(
        json.dumps(
            {
                "edges": edges,
                "parse_seconds": round(parsed - started, 3),
                "csr_seconds": round(built - parsed, 3),
                "edges_per_second": round(edges / (built - started)),
                "csr_bytes": arrays,
                "csr_bytes_per_edge": round(arrays / max(edges, 1), 2),
            }
        )
    )


# ------------------------------------------------------------------------------------------------ serving


def open_engine(index: Path) -> tuple[Any, dict[str, Any]]:
    """Open the index store by store, recording time and RSS growth of each (then the engine over them)."""
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.models.index_encoder import encoder_for_index
    from skbqa.stores.graph.csr import CsrGraph
    from skbqa.stores.index import EMBEDDING_SETS, IndexStores, load_vector_set, read_manifest
    from skbqa.stores.nodes import NodeTable
    from skbqa.stores.text.bm25 import Bm25Index

    report: dict[str, Any] = {"rss_before_mib": round(rss_mib(), 1)}
    manifest = read_manifest(index)

    def step(name: str, load: Any) -> Any:
        before, started = rss_mib(), time.perf_counter()
        value = load()
        report[name] = {
            "seconds": round(time.perf_counter() - started, 2),
            "rss_mib": round(rss_mib() - before, 1),
        }
        return value

    nodes = step("nodes", lambda: NodeTable.load(index / "nodes"))
    graph = step("graph", lambda: CsrGraph.load(index / "graph"))
    bm25 = step("bm25", lambda: Bm25Index.load(index / "bm25"))
    vectors = {s: step(f"vectors_{s}", lambda s=s: load_vector_set(index / "vectors" / s)) for s in EMBEDDING_SETS}
    stores = IndexStores(index, manifest, nodes, graph, bm25, vectors)
    encoder = encoder_for_index(index, manifest["encoder"]["name"])
    engine = step("engine", lambda: EmbeddedEngine(stores, encoder))
    step("warm_af", lambda: engine.warm("af"))
    report["rss_after_open_mib"] = round(rss_mib(), 1)
    return engine, report


def run_strategies(engine: Any, items: list[Any]) -> dict[str, Any]:
    from skbqa.eval.metrics import mean_metrics, percentiles, question_metrics

    out: dict[str, Any] = {}
    for strategy in STRATEGIES:
        totals: list[float] = []
        stages: dict[str, list[float]] = defaultdict(list)
        rows = []
        for item in items:
            answer = engine.ask(item.question, strategy=strategy, k=20)
            totals.append(answer.timings_ms["total"])
            for stage, ms in answer.timings_ms.items():
                if stage != "total":
                    stages[stage].append(ms)
            rows.append(question_metrics([a.node_id for a in answer.items], item.answers))
        out[strategy] = {
            "latency_ms": percentiles(totals),
            "steps_ms": {s: percentiles(v) for s, v in stages.items()},
            "metrics": mean_metrics(rows),
        }
        lat = out[strategy]["latency_ms"]
        print(f"  {strategy:<7} p50 {lat['p50']:7.1f} ms  p95 {lat['p95']:7.1f} ms  {out[strategy]['metrics']}")
    base = out["vss"]["latency_ms"]
    for entry in out.values():
        entry["ratio_vs_vss"] = {
            "p50": round(entry["latency_ms"]["p50"] / base["p50"], 2),
            "p95": round(entry["latency_ms"]["p95"] / base["p95"], 2),
        }
        # Each af step against the whole vss request: where af's extra time goes, in units of the baseline.
        entry["steps_vs_vss_p50"] = {s: round(v["p50"] / base["p50"], 3) for s, v in entry["steps_ms"].items()}
    return out


def grounding(engine: Any, items: list[Any]) -> dict[str, Any]:
    """Ground time by number of triplets and l_max; scope iterations per l_max."""
    from skbqa.eval.metrics import percentiles

    out: dict[str, Any] = {}
    for l_max in L_MAX:
        by_triplets: dict[int, list[float]] = defaultdict(list)
        iterations: list[int] = []
        candidates: list[int] = []
        for item in items:
            answer = engine.ask(item.question, strategy="af", k=20, options={"l_max": l_max})
            triplets = len(answer.notes.get("parsed", {}).get("triplets", []))
            by_triplets[triplets].append(answer.timings_ms.get("ground", 0.0))
            scope = answer.notes.get("scope") or {}
            iterations.append(len(scope.get("iterations", [])))
            candidates.append(int(scope.get("candidates", 0)))
        out[str(l_max)] = {
            "ground_ms_by_triplets": {
                str(t): {"n": len(v), **percentiles(v)} for t, v in sorted(by_triplets.items())
            },
            "scope_iterations": {"mean": round(float(np.mean(iterations)), 2), "max": int(max(iterations))},
            "grounded_candidates_p50": float(np.percentile(candidates, 50)),
        }
        print(f"  l_max {l_max:>4}: {out[str(l_max)]}")
    return out


def ann_recall(engine: Any, items: list[Any]) -> dict[str, Any]:
    """recall@20 of ANN vs the exact scan, question vectors, unfiltered and filtered to the answer type."""
    from skbqa.stores.vectors.ann import AnnIndex

    stores = engine.stores
    queries = engine.encoder.encode([item.question for item in items])
    type_of = [int(stores.nodes.types[stores.nodes.positions(item.answers[:1])[0]]) for item in items]
    out: dict[str, Any] = {}
    for name in ("relations", "name"):
        index = stores.vectors[name]
        if not isinstance(index, AnnIndex):
            out[name] = {"index": "exact"}
            continue
        truth_all, truth_typed = _exact_top(index, queries, type_of, 20)
        entry: dict[str, Any] = {"partitions": index.meta["partitions"], "default_nprobe": index.nprobe}
        default = index.nprobe
        for nprobe in NPROBES:
            index.nprobe = nprobe
            started = time.perf_counter()
            found = [index.search(queries[i : i + 1], 20)[0] for i in range(len(items))]
            unfiltered_ms = (time.perf_counter() - started) * 1000 / len(items)
            started = time.perf_counter()
            typed = [index.search(queries[i : i + 1], 20, node_types=[type_of[i]])[0] for i in range(len(items))]
            typed_ms = (time.perf_counter() - started) * 1000 / len(items)
            entry[str(nprobe)] = {
                "recall@20": _recall(found, truth_all),
                "recall@20_typed": _recall(typed, truth_typed),
                "ms_per_query": round(unfiltered_ms, 2),
                "ms_per_query_typed": round(typed_ms, 2),
            }
            print(f"  ann {name:<9} nprobe {nprobe:>3}: {entry[str(nprobe)]}")
        index.nprobe = default
        out[name] = entry
    return out


def _exact_top(
    index: Any, queries: np.ndarray, type_of: list[int], k: int
) -> tuple[list[set[int]], list[set[int]]]:
    keys, types = index._sorted_keys, index._key_types
    best = np.full((len(queries), 0), -np.inf, np.float32)
    best_keys = np.zeros((len(queries), 0), np.int64)
    best_t = np.full((len(queries), 0), -np.inf, np.float32)
    best_t_keys = np.zeros((len(queries), 0), np.int64)
    wanted = np.asarray(type_of)[:, None]
    for start in range(0, keys.size, 100_000):
        chunk = keys[start : start + 100_000]
        scores = queries @ index.vectors_for(chunk).T
        ids = np.broadcast_to(chunk, scores.shape)
        best, best_keys = _merge(best, best_keys, scores, ids, k)
        typed = np.where(types[start : start + 100_000][None, :] == wanted, scores, -np.inf)
        best_t, best_t_keys = _merge(best_t, best_t_keys, typed, ids, k)
    return [set(r) for r in best_keys.tolist()], [set(r) for r in best_t_keys.tolist()]


def _merge(
    a: np.ndarray, a_ids: np.ndarray, b: np.ndarray, b_ids: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    scores = np.concatenate([a, b], axis=1)
    ids = np.concatenate([a_ids, b_ids], axis=1)
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return np.take_along_axis(scores, top, axis=1), np.take_along_axis(ids, top, axis=1)


def _recall(found: list[Any], truth: list[set[int]]) -> float:
    return round(
        float(np.mean([len(set(h.keys.tolist()) & t) / len(t) for h, t in zip(found, truth, strict=True)])), 4
    )


def vector_bytes(engine: Any) -> int:
    """Bytes held by the vector sets: float16 in the ANN adapter, the stored dtype in the exact one."""
    from skbqa.stores.vectors.ann import AnnIndex

    total = 0
    for index in engine.stores.vectors.values():
        itemsize = 2 if isinstance(index, AnnIndex) else index._vectors.dtype.itemsize
        total += len(index) * index.dim * itemsize
    return total


def encoders(engine: Any, bundle: Path) -> dict[str, Any]:
    """Throughput of the static encoder (precomputation) and MiniLM int8 on a sample of the same texts."""
    from skbqa.ingest.documents import embedded_texts
    from skbqa.models.local_encoder import load_encoder

    stores = engine.stores
    manifest = json.loads((bundle / "vectors" / "manifest.json").read_text())
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(len(stores.nodes), ENCODER_SAMPLE, replace=False))
    texts = [
        t for s in ("name", "document", "relations") for t in embedded_texts(s, stores.nodes, stores.graph, sample)
    ]
    minilm = load_encoder("onnx-int8")
    minilm.encode(texts[:32])
    started = time.perf_counter()
    minilm.encode(texts)
    minilm_rate = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    engine.encoder.encode(texts)
    static_rate = len(texts) / (time.perf_counter() - started)
    total = 3 * len(stores.nodes)
    return {
        "static_texts_per_second_precompute": manifest["encoder_texts_per_second"],
        "static_texts_per_second_sample": round(static_rate, 1),
        "minilm_int8_texts_per_second_sample": round(minilm_rate, 1),
        "static_vs_minilm": round(static_rate / minilm_rate, 1),
        "minilm_hours_for_all_texts": round(total / minilm_rate / 3600, 2),
        "precompute_seconds": manifest["seconds"]["total"],
    }


def profile(engine: Any, items: list[Any], out: Path) -> dict[str, Any]:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    for item in items:
        engine.ask(item.question, strategy="af", k=20)
    session = profiler.stop()
    out.write_text(profiler.output_text(unicode=False, color=False))
    own: dict[str, float] = defaultdict(float)

    def walk(frame: Any, parent: str) -> None:
        # pyinstrument puts a function's own time in a synthetic "[self]" child: credit it to the function.
        label = (
            parent if frame.function == "[self]" else f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        )
        children = frame.children
        own[label] += frame.time - sum(c.time for c in children)
        for child in children:
            walk(child, label)

    walk(session.root_frame(), "<root>")
    total = session.duration
    top = sorted(own.items(), key=lambda kv: -kv[1])[:15]
    return {
        "file": str(out),
        "seconds": round(total, 2),
        "top_own": [[name, round(t / total, 3)] for name, t in top],
    }


# ------------------------------------------------------------------------------------------------ main


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/skbqa-scale"))
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--avg-degree", type=float, default=40.0)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--reuse", action="store_true", help="keep an existing bundle/index of this size")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep bundle and index afterwards")
    parser.add_argument("--graph-load", type=Path, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    if args.graph_load:
        graph_load(args.graph_load)
        return 0

    from skbqa.skb.qa import load_qa

    bundle, index = args.work / f"bundle-{args.nodes}", args.work / f"index-{args.nodes}"
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "nodes": args.nodes,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_start": os.getloadavg(),
        },
    }
    print(f"== scale {args.nodes:,} nodes")
    if not (args.reuse and (bundle / "vectors" / "relations.npy").is_file()) and not (
        args.reuse and (index / "manifest.json").is_file() and (bundle / "qa.jsonl").is_file()
    ):
        shutil.rmtree(bundle, ignore_errors=True)
        result["synth"] = run_child(
            skbqa(
                *("synth", str(bundle), "--nodes", str(args.nodes), "--avg-degree", str(args.avg_degree)),
                *("--questions", str(args.questions), "--seed", "1", "--vectors"),
            )
        )
    out = subprocess.run(
        [sys.executable, __file__, "--nodes", "0", "--graph-load", str(bundle)],
        check=True,
        capture_output=True,
        text=True,
    )
    result["graph_load"] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  graph load: {result['graph_load']}")
    if not (args.reuse and (index / "manifest.json").is_file()):
        result["ingest"] = run_child(
            skbqa(
                "ingest", str(bundle), "--index", str(index), "--precomputed-vectors", "--force", "--no-progress"
            )
        )
    manifest = json.loads((index / "manifest.json").read_text())
    result["index"] = {k: manifest.get(k) for k in ("counts", "seconds", "peak_rss_mib", "disk_bytes")} | {
        "vector_sets": {
            k: {kk: v.get(kk) for kk in ("index", "rows", "nprobe", "self_recall@20")}
            for k, v in manifest["vectors"]["sets"].items()
        }
    }
    print(f"  ingest: {result.get('ingest')} stages {manifest['seconds']}")

    engine, result["open"] = open_engine(index)
    print(f"  open: {result['open']}")
    items = load_qa(bundle / "qa.jsonl")
    result["strategies"] = run_strategies(engine, items)
    result["grounding"] = grounding(engine, items)
    result["ann"] = ann_recall(engine, items)
    nodes, edges = manifest["counts"]["nodes"], manifest["counts"]["edges"]
    rss = rss_mib()
    result["memory"] = {
        "rss_serving_mib": round(rss, 1),
        "peak_rss_serving_mib": round(peak_mib(), 1),
        "rss_bytes_per_node": round(rss * 2**20 / nodes),
        "graph_bytes_per_edge": result["graph_load"]["csr_bytes_per_edge"],
        "vector_bytes_per_node": round(vector_bytes(engine) / nodes),
        "disk_bytes_per_node": round(sum(manifest["disk_bytes"].values()) / nodes),
        "edges": edges,
    }
    if args.profile:
        result["profile"] = profile(engine, items, args.out / f"profile-af-{args.nodes}.txt")
    result["encoders"] = encoders(engine, bundle)
    result["machine"]["load_avg_end"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"scale-{args.nodes}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
    if not args.keep:
        for npy in (bundle / "vectors").glob("*.npy"):  # the large part (the index holds its own copy now)
            npy.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
