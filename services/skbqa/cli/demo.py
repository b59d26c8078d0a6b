"""`skbqa demo`: ingest a bundle (when its index is missing or stale), answer its questions, show why.

This is what `make demo` runs on the bundled biomedical sample: the newcomer's first look at the system.
"""

from __future__ import annotations

import json
from pathlib import Path

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.ingest.builder import bundle_checksum, ingest
from skbqa.models.local_encoder import load_encoder
from skbqa.skb.qa import load_qa
from skbqa.stores.index import MANIFEST

SHOWN_PER_QUESTION = 5
# The baselines and the default pipeline: strategies that need an LLM or extra offline builds are left out.
DEMO_STRATEGIES = ("bm25", "vss", "hybrid", "af")


def index_is_current(bundle: Path, index: Path, encoder_name: str) -> bool:
    try:
        manifest = json.loads((index / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return manifest.get("bundle", {}).get("sha256") == bundle_checksum(bundle) and (
        manifest.get("encoder", {}).get("name") == encoder_name
    )


def run_demo(bundle: Path, index: Path, *, qa_file: str, strategy: str, questions: int, out=print) -> dict:
    encoder = load_encoder("onnx-int8")
    if index_is_current(bundle, index, encoder.name):
        out(f"index {index} is up to date with {bundle}")
    else:
        out(f"ingesting {bundle} into {index} (three embedding sets per node, BM25, graph) ...")
        report = ingest(bundle, index, encoder, force=True, progress=False)
        out(
            f"  {report.nodes} nodes, {report.edges} edges, {report.texts_encoded} texts encoded in "
            f"{report.seconds.get('encode', 0):.0f} s ({report.encode_rate:.0f}/s), total {report.seconds['total']:.0f} s"
        )
    engine = EmbeddedEngine.open(index).warm(*DEMO_STRATEGIES)
    items = load_qa(bundle / qa_file)
    nodes = engine.stores.nodes
    for item in items[:questions]:
        result = engine.ask(item.question, strategy=strategy, k=20)
        gold = set(item.answers)
        expected = [nodes.names[int(p)] for p in nodes.positions(item.answers) if p >= 0]
        out("")
        out(f"Q: {item.question}")
        out(f"   expected: {'; '.join(expected)}")
        for answer in result.items[:SHOWN_PER_QUESTION]:
            mark = "✓" if answer.node_id in gold else " "
            out(f" {mark} {answer.rank}. {answer.name} ({answer.type}, id {answer.node_id}) — {answer.why}")
        found = [a.rank for a in result.items if a.node_id in gold]
        out(f"   answers found at ranks {found or 'none'} of top 20, {result.timings_ms['total']:.0f} ms")
    reports = [evaluate_strategy(engine, items, s) for s in DEMO_STRATEGIES]
    summary = compare(reports)
    out("")
    out(f"All {len(items)} questions, ratios against bm25 (same run):")
    for name, report in summary["strategies"].items():
        m = report["metrics"]
        r = summary["ratios"][name]
        out(
            f"  {name:<7} hit@1 {m['hit@1']:5.1f} (×{r['hit@1'] or 0:.2f})  recall@20 {m['recall@20']:5.1f} "
            f"(×{r['recall@20'] or 0:.2f})  mrr {m['mrr']:5.1f} (×{r['mrr'] or 0:.2f})  "
            f"p50 {report['latency_ms']['p50']:.1f} ms"
        )
    return summary
