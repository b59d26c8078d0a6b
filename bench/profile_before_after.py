"""af's hot paths before and after the scale work, profiled in one process on the same index and questions.

    nice -n 19 .venv/bin/python bench/profile_before_after.py --index /tmp/skbqa-scale/index-1000000 \
        --qa /tmp/skbqa-scale/bundle-1000000/qa.jsonl --base HEAD

"before" swaps in the per-query code of git revision BASE (read with `git show`, nothing is checked out): step 7's
`fused_pool` (dense BM25 over every node, a type mask built per query, a partial sort over every node), dense
BM25 scoring with `np.add.at` (as bm25s scores), and grounding's unconditional re-sorting of starting sets and exact
degree sums. The stores are the same for both (the ANN index, the persisted lexicon), so the difference is the
per-query work. Rounds alternate before/after so machine load hits both alike; each side's latency p50/p95 and
its top frames by own time (pyinstrument) are written to OUT.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.metrics import percentiles
from skbqa.skb.qa import load_qa


def old_module(base: str, path: str, name: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{base}:{path}"], check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(name)
    module.__file__ = f"<{base}:{path}>"
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def dense_add_at_scores(self: Any, query: str) -> np.ndarray:
    """bm25s' scoring as `Bm25Index.scores` did it before: np.add.at over each query term's column."""
    out = np.zeros(len(self), np.float32)
    for term in self._term_ids(query):
        start, end = int(self._indptr[term]), int(self._indptr[term + 1])
        np.add.at(out, self._indices[start:end], self._data[start:end])
    return out


def switch(before: bool, base: str, saved: dict[str, Any]) -> None:
    import skbqa.stages.grounding.algorithm as core
    import skbqa.strategies.af as af
    import skbqa.strategies.hybrid as hybrid
    from skbqa.stores.text.bm25 import Bm25Index

    if not saved:
        saved.update(
            fused_pool=hybrid.fused_pool,
            scores=Bm25Index.scores,
            sorted_unique=core.sorted_unique,
            walk_cost=core.walk_cost,
            old_hybrid=old_module(base, "services/skbqa/strategies/hybrid.py", "old_hybrid"),
        )
    if before:
        hybrid.fused_pool = af.fused_pool = saved["old_hybrid"].fused_pool
        Bm25Index.scores = dense_add_at_scores  # type: ignore[method-assign]
        core.sorted_unique = lambda values: np.unique(np.asarray(values, np.int64))
        core.walk_cost = lambda graph, nodes, edge, direction: int(graph.degree(nodes, edge, direction).sum())
    else:
        hybrid.fused_pool = af.fused_pool = saved["fused_pool"]
        Bm25Index.scores = saved["scores"]  # type: ignore[method-assign]
        core.sorted_unique = saved["sorted_unique"]
        core.walk_cost = saved["walk_cost"]


def top_frames(session: Any, limit: int = 15) -> list[list[Any]]:
    own: dict[str, float] = defaultdict(float)

    def walk(frame: Any, parent: str) -> None:
        label = (
            parent if frame.function == "[self]" else f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        )
        own[label] += frame.time - sum(c.time for c in frame.children)
        for child in frame.children:
            walk(child, label)

    walk(session.root_frame(), "<root>")
    total = sum(own.values())
    return [[name, round(t / total, 3)] for name, t in sorted(own.items(), key=lambda kv: -kv[1])[:limit]]


def main() -> int:
    from pyinstrument import Profiler

    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/profile-af-before-after.json"))
    args = parser.parse_args()

    engine = EmbeddedEngine.open(args.index).warm("af")
    items = load_qa(args.qa)
    saved: dict[str, Any] = {}
    latencies: dict[str, list[float]] = {"before": [], "after": []}
    profiles: dict[str, Any] = {}
    for _ in range(args.rounds):
        for side in ("before", "after"):
            switch(side == "before", args.base, saved)
            profiler = Profiler(interval=0.0005)
            profiler.start()
            for item in items:
                latencies[side].append(engine.ask(item.question, strategy="af", k=20).timings_ms["total"])
            session = profiler.stop()
            profiles[side] = (profiler, session)  # the last round's profile
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"index": str(args.index), "questions": len(items), "rounds": args.rounds}
    for side, (profiler, session) in profiles.items():
        text = args.out.with_name(f"profile-af-{side}.txt")
        text.write_text(profiler.output_text(unicode=False, color=False))
        result[side] = {
            "latency_ms": percentiles(latencies[side]),
            "top_own": top_frames(session),
            "tree": str(text),
        }
        print(side, result[side]["latency_ms"])
        for name, share in result[side]["top_own"][:10]:
            print(f"  {share:6.3f}  {name}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
