"""AF strategy rows with an LLM behind the OpenAI-compatible adapter: STaRK metrics, latency and token usage.

The same loop as `skbqa eval` (engine.ask per question, `question_metrics` at the same depth, every row on the
same questions in one process), plus what the CLI report lacks: per-question LLM token usage (parser:
`notes['llm_usage']`, step 8: `notes['rerank_usage']`), rerank notes (deadline / llm error), parser fallbacks,
step-1 type accuracy against the QA file's `target_type`, the adapter's counters per row and wall time per row.

    SKBQA_LLM_URL=http://127.0.0.1:PORT/v1 SKBQA_LLM_MODEL=smollm2 .venv/bin/python bench/af_llm_eval.py \\
        --index .skbqa/biomed-int8 --qa ../shared/data/biomed-skb/qa-dev.jsonl --limit 20 \\
        --strategy 'bm25,af[parser=encoder],af[parser=llm]' --out /tmp/run1.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.metrics import mean_metrics, percentiles, question_metrics
from skbqa.eval.specs import parse_spec, split_specs
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.skb.qa import load_qa

TOKEN_KEYS = ("prompt_tokens", "completion_tokens")


class RecordingChat:
    """Delegates to the real adapter and appends every call (last 600 prompt characters, the reply, usage,
    seconds, or the error) to a JSONL file, so unparsed replies can be inspected afterwards."""

    def __init__(self, inner: OpenAIChatModel, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._lock = __import__("threading").Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def chat(self, messages: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        entry: dict[str, Any] = {
            "messages": len(messages),
            "prompt_tail": messages[-1].content[-600:],
            "max_tokens": kwargs.get("max_tokens"),
            "timeout": kwargs.get("timeout"),
        }
        try:
            reply = self._inner.chat(messages, **kwargs)
            entry.update(
                reply=reply.content, prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens
            )
            return reply
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            entry["seconds"] = round(time.perf_counter() - started, 2)
            with self._lock, self._path.open("a") as out:
                out.write(json.dumps(entry) + "\n")


def run_row(
    engine: EmbeddedEngine, chat: OpenAIChatModel, items: list[Any], spec: str, depth: int
) -> dict[str, Any]:
    name, options = parse_spec(spec)
    before = chat.counters()
    started = time.perf_counter()
    rows: list[dict[str, float]] = []
    totals: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    questions: list[dict[str, Any]] = []
    usage = Counter()
    notes = Counter()
    errors: list[dict[str, str]] = []
    type_hits = type_known = 0
    for n, item in enumerate(items, 1):
        known = [
            a for a, p in zip(item.answers, engine.stores.nodes.positions(item.answers), strict=True) if p >= 0
        ]
        if not known:
            continue
        q_started = time.perf_counter()
        try:
            result = engine.ask(item.question, strategy=name, k=depth, options=options)
        except Exception as exc:  # record and go on: the report says what failed
            errors.append(
                {"id": item.id, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-1500:]}
            )
            print(f"  [{spec}] {item.id}: ERROR {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            continue
        row = question_metrics([a.node_id for a in result.items], known)
        rows.append(row)
        totals.append(result.timings_ms["total"])
        for stage, ms in result.timings_ms.items():
            if stage != "total":
                stages[stage].append(ms)
        llm_usage = result.notes.get("llm_usage") or {}
        rerank_usage = result.notes.get("rerank_usage") or {}
        for key, value in llm_usage.items():
            usage[f"parser_{key}"] += int(value)
        for key, value in rerank_usage.items():
            usage[f"rerank_{key}"] += int(value)
        rerank_note = result.notes.get("rerank", "")
        if rerank_note:
            notes["rerank:" + rerank_note.split(":")[0]] += 1
        fallback = result.notes.get("parser_fallback")
        if fallback:
            notes["parser_fallback"] += 1
        parsed = result.notes.get("parsed") or {}
        gold_type = item.meta.get("target_type")
        predicted = parsed.get("predicted_type") or parsed.get("target_type")
        if gold_type:
            type_known += 1
            type_hits += int(predicted == gold_type)
        warnings = parsed.get("warnings", [])
        for w in warnings:
            notes["warning:" + w.split("(")[0].split(":")[0].strip()[:60]] += 1
        questions.append(
            {
                "id": item.id,
                "gold_type": gold_type,
                "predicted_type": parsed.get("predicted_type"),
                "target_type": parsed.get("target_type"),
                "triplets": len(parsed.get("triplets", [])),
                "constants": [s.get("names") for s in parsed.get("symbols", {}).values() if s.get("names")],
                "warnings": warnings,
                "parser_fallback": fallback,
                "rerank_note": rerank_note,
                "llm_usage": llm_usage,
                "rerank_usage": rerank_usage,
                "metrics": row,
                "total_ms": result.timings_ms["total"],
                "wall_ms": round((time.perf_counter() - q_started) * 1000, 1),
            }
        )
        print(
            f"  [{spec}] {n}/{len(items)} {item.id}: hit@1={row['hit@1']:.0f} mrr={row['mrr']:.2f} "
            f"{result.timings_ms['total'] / 1000:.1f}s llm={llm_usage or '-'} rerank={rerank_usage or '-'} "
            f"note={rerank_note or fallback or '-'}",
            file=sys.stderr,
            flush=True,
        )
    wall = time.perf_counter() - started
    after = chat.counters()
    latency: dict[str, Any] = percentiles(totals)
    for stage, values in stages.items():
        latency[stage] = percentiles(values)
    return {
        "strategy": spec,
        "n": len(rows),
        "errors": errors,
        "metrics": mean_metrics(rows),
        "latency_ms": latency,
        "wall_seconds": round(wall, 1),
        "usage": dict(usage),
        "adapter_counters": {k: after[k] - before[k] for k in after},
        "notes": dict(notes),
        "type_accuracy": round(100.0 * type_hits / type_known, 1) if type_known else None,
        "questions": questions,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--qa", type=Path, required=True)
    ap.add_argument("--strategy", required=True)
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--rerank-deadline",
        type=float,
        default=None,
        help="rebuild the af strategy's LLM rerankers with this deadline (s); default: the engine's own (30 s)",
    )
    ap.add_argument("--rerank-reply-tokens", type=int, default=None, help="with --rerank-deadline: reply budget")
    ap.add_argument("--record", type=Path, default=None, help="append every LLM call and reply to this JSONL")
    args = ap.parse_args()

    chat = OpenAIChatModel.from_env()
    engine_chat: Any = RecordingChat(chat, args.record) if args.record else chat
    started = time.perf_counter()
    engine = EmbeddedEngine.open(args.index, chat=engine_chat)
    if args.rerank_deadline is not None:
        # AfConfig.rerank_deadline_s is not read by anything, so the deadline can only be set by building the
        # rerankers here (the same classes the engine builds, with LlmRerankSettings(deadline=...)).
        from skbqa.stages.rerank.llm_common import LlmRerankSettings
        from skbqa.stages.rerank.registry import LLM_RERANKERS, RerankerSettings, build_reranker
        from skbqa.strategies.af import AfStrategy

        settings = RerankerSettings(
            llm=LlmRerankSettings(deadline=args.rerank_deadline, reply_tokens=args.rerank_reply_tokens)
        )
        rerankers = {n: build_reranker(n, engine.stores, engine_chat, settings) for n in ("local", *LLM_RERANKERS)}
        engine.strategies["af"] = AfStrategy(engine.stores, chat=engine_chat, rerankers=rerankers)
    items = load_qa(args.qa)[: args.limit]
    open_seconds = time.perf_counter() - started
    rows = []
    for spec in split_specs(args.strategy):
        print(f"row {spec} on {len(items)} questions", file=sys.stderr, flush=True)
        rows.append(run_row(engine, chat, items, spec, args.depth))
        # write after every row so a later failure keeps what was measured
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {
                    "index": str(args.index),
                    "qa": str(args.qa),
                    "limit": args.limit,
                    "question_ids": [i.id for i in items],
                    "depth": args.depth,
                    "chat": repr(chat),
                    "chat_settings": {
                        "timeout": chat.timeout,
                        "retries": chat.retries,
                        "concurrency": chat.concurrency,
                        "context_window": chat.context_window,
                        "max_tokens": chat.max_tokens,
                    },
                    "engine_open_seconds": round(open_seconds, 1),
                    "rerank_deadline_s": args.rerank_deadline or 30.0,
                    "rerank_reply_tokens": args.rerank_reply_tokens,
                    "rows": rows,
                },
                indent=2,
            )
        )
    base = rows[0]["metrics"]
    for r in rows:
        m = r["metrics"]
        print(
            f"{r['strategy']:<45} n={r['n']:<3} hit@1 {m['hit@1']:6.2f} hit@5 {m['hit@5']:6.2f} "
            f"r@20 {m['recall@20']:6.2f} mrr {m['mrr']:6.2f} p50 {r['latency_ms']['p50']:9.1f} "
            f"p95 {r['latency_ms']['p95']:9.1f} wall {r['wall_seconds']}s usage {r['usage']} "
            f"errors {len(r['errors'])}; hit@1 ratio {m['hit@1'] / base['hit@1'] if base['hit@1'] else float('nan'):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
