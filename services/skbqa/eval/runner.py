"""`skbqa eval`: run strategies over a QA file (in this process, or against a server) and report STaRK metrics, latency and ratios.

With several strategies, every strategy answers the same questions in the same process, and the report gives
each metric (and p50 latency) as a ratio against the first strategy — the baseline measured in the same run.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.answerers import Answerer, as_answerer
from skbqa.eval.metrics import METRIC_NAMES, mean_metrics, percentiles, question_metrics
from skbqa.eval.specs import parse_spec
from skbqa.skb.model import QAItem

logger = logging.getLogger(__name__)

DEFAULT_EVAL_DEPTH = 100  # MRR looks past the top 20, as STaRK's does


@dataclass
class StrategyReport:
    strategy: str
    n: int
    metrics: dict[str, float]
    latency_ms: dict[str, Any]
    by_target_type: dict[str, dict[str, Any]]
    skipped: int
    # Per `meta.family` of the QA file, when its questions carry one (which shapes of question fail).
    by_family: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What the LLM path really did: calls, tokens, and how often it fell back (a row whose parser always fell
    # back measures the encoder parser, and the report must say so).
    llm: dict[str, int] = field(default_factory=dict)
    answered_by: str = "in-process"  # or "server HOST:PORT" (latency then measured at the client)
    throughput_qps: float = 0.0  # questions answered per second of wall time, at `concurrency` in flight
    concurrency: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "n": self.n,
            "metrics": self.metrics,
            "latency_ms": self.latency_ms,
            "by_target_type": self.by_target_type,
            **({"by_family": self.by_family} if self.by_family else {}),
            "skipped_questions": self.skipped,
            **({"llm": self.llm} if self.llm else {}),
            "answered_by": self.answered_by,
            "throughput_qps": self.throughput_qps,
            "concurrency": self.concurrency,
        }


def family_of(item: QAItem) -> str | None:
    """The question's family from the QA line's `meta.family` (or a top-level `family`), if it has one."""
    nested = item.meta.get("meta")
    family = nested.get("family") if isinstance(nested, dict) else item.meta.get("family")
    return family if isinstance(family, str) and family else None


def first_correct_rank(ranked: Sequence[int], answers: Sequence[int]) -> int | None:
    wanted = set(answers)
    return next((rank for rank, node in enumerate(ranked, start=1) if node in wanted), None)


def question_record(
    strategy: str, item: QAItem, result: Any, known: list[int], target_type: str
) -> dict[str, Any]:
    """One line of `--per-question`: the question, where the first correct answer ranked, and what the strategy
    understood (the parse, the grounding scope, the constants' candidates) with the top answers' evidence."""
    ranked = [a.node_id for a in result.items]
    notes = result.notes
    return {
        "strategy": strategy,
        "id": item.id,
        "question": item.question,
        "family": family_of(item),
        "target_type": target_type,
        "answers": known,
        "first_correct_rank": first_correct_rank(ranked, known),
        "parsed": notes.get("parsed"),
        "scope": notes.get("scope"),
        "constants": notes.get("constants"),
        "top": [
            {
                "rank": a.rank,
                "id": a.node_id,
                "name": a.name,
                "type": a.type,
                "correct": a.node_id in known,
                "source": a.source,
                "evidence": a.evidence,
            }
            for a in result.items[:5]
        ],
    }


def evaluate_strategy(
    source: EmbeddedEngine | Answerer,
    items: Sequence[QAItem],
    strategy: str,
    *,
    depth: int = DEFAULT_EVAL_DEPTH,
    progress: bool = False,
    on_question: Callable[[dict[str, Any]], None] | None = None,
    concurrency: int = 1,
) -> StrategyReport:
    """Score `strategy` on `items`, asked of an engine in this process or of a server (`ServerAnswerer`);
    `concurrency` questions are in flight at once (results are kept in question order)."""
    answerer = as_answerer(source)
    name, options = parse_spec(strategy)
    scored = [(item, known) for item in items if (known := answerer.known_answers(item))]
    skipped = len(items) - len(scored)  # every answer is outside this index: nothing can be scored

    def ask(entry: tuple[QAItem, list[int]]) -> tuple[Any, float]:
        return answerer.ask(entry[0].question, strategy=name, k=depth, options=options)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        answered: Iterable[tuple[Any, float]] = pool.map(ask, scored) if concurrency > 1 else map(ask, scored)
        if progress:
            from tqdm import tqdm

            answered = tqdm(answered, total=len(scored), desc=f"eval {strategy}", unit="q", leave=False)
        results = list(answered)
    wall_s = time.perf_counter() - started

    rows: list[dict[str, float]] = []
    per_type: dict[str, list[dict[str, float]]] = defaultdict(list)
    per_family: dict[str, list[dict[str, float]]] = defaultdict(list)
    totals: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    llm: dict[str, int] = {}
    for (item, known), (result, latency_ms) in zip(scored, results, strict=True):
        row = question_metrics([a.node_id for a in result.items], known)
        rows.append(row)
        target_type = answerer.target_type(item)
        per_type[target_type].append(row)
        family = family_of(item)
        if family is not None:
            per_family[family].append(row)
        if on_question is not None:
            on_question(question_record(strategy, item, result, known, target_type))
        totals.append(latency_ms)
        _count_llm(llm, result.notes)
        for stage, ms in result.timings_ms.items():
            if stage != "total":
                stages[stage].append(ms)
    if skipped:
        logger.warning("%d questions skipped: none of their answers is in the index", skipped)
    latency: dict[str, Any] = percentiles(totals)
    for stage, values in stages.items():
        latency[stage] = percentiles(values)
    by_type = {t: {"n": len(r), **mean_metrics(r)} for t, r in sorted(per_type.items())}
    by_family = {f: {"n": len(r), **mean_metrics(r)} for f, r in sorted(per_family.items())}
    return StrategyReport(
        strategy,
        len(rows),
        mean_metrics(rows),
        latency,
        by_type,
        skipped,
        by_family,
        llm,
        answered_by=answerer.where,
        throughput_qps=round(len(rows) / wall_s, 3) if wall_s > 0 and rows else 0.0,
        concurrency=max(1, concurrency),
    )


def _count_llm(totals: dict[str, int], notes: dict[str, Any]) -> None:
    def add(key: str, amount: int) -> None:
        if amount:
            totals[key] = totals.get(key, 0) + amount

    for source, prefix in ((notes.get("llm_usage") or {}, "parser"), (notes.get("rerank_usage") or {}, "rerank")):
        for key in ("calls", "prompts", "prompt_tokens", "completion_tokens", "failed", "skipped"):
            add(f"{prefix}_{key}", int(source.get(key, 0) or 0))
    add("parser_fallbacks", int("parser_fallback" in notes))
    add("rerank_incomplete", int("rerank" in notes))


def compare(reports: Sequence[StrategyReport]) -> dict[str, Any]:
    """The first report's figures at the top level (the `skbqa eval --json` contract), plus every strategy and
    the ratios of each against the first."""
    base = reports[0]
    ratios: dict[str, dict[str, float | None]] = {}
    for report in reports:
        entry: dict[str, float | None] = {}
        for name in METRIC_NAMES:
            denominator = base.metrics[name]
            entry[name] = round(report.metrics[name] / denominator, 3) if denominator else None
        base_p50 = base.latency_ms["p50"]
        entry["latency_p50"] = round(report.latency_ms["p50"] / base_p50, 3) if base_p50 else None
        ratios[report.strategy] = entry
    out = base.to_dict()
    out["baseline"] = base.strategy
    out["strategies"] = {r.strategy: r.to_dict() for r in reports}
    out["ratios"] = ratios
    return out
