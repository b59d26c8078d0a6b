"""STaRK metrics for one ranked list, and their aggregation.

hit@k: 1 if any answer is in the top k. recall@20 = |answers ∩ top-20| / |answers|. MRR: 1 / rank of the first
answer in the ranked list (0 when none is returned). Aggregates are means in percent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

METRIC_NAMES = ("hit@1", "hit@5", "hit@20", "recall@20", "mrr")


def question_metrics(ranked: Sequence[int], answers: Iterable[int]) -> dict[str, float]:
    gold = set(answers)
    if not gold:
        raise ValueError("a question needs at least one answer to be scored")
    first = next((i for i, node in enumerate(ranked) if node in gold), None)
    top20 = set(ranked[:20])
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@20": float(first is not None and first < 20),
        "recall@20": len(gold & top20) / len(gold),
        "mrr": 0.0 if first is None else 1.0 / (first + 1),
    }


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {name: 0.0 for name in METRIC_NAMES}
    return {name: round(100.0 * float(np.mean([r[name] for r in rows])), 2) for name in METRIC_NAMES}


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    arr = np.asarray(values, float)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3)}
