"""Live updates end to end on the real sample: an index built from a base bundle and brought forward by a change
stream ranks exactly like a fresh ingest of the final bundle, for bm25, vss, hybrid and af, before and after
compaction; and only changed texts are encoded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.skb.qa import load_qa
from tests.change_bundles import split_bundle
from tests.conftest import SAMPLE_BUNDLE
from tests.helpers import HashingEncoder

STRATEGIES = ("bm25", "vss", "hybrid", "af")


def _questions(final: Path, changes: list[dict]) -> list[str]:
    """The sample's questions, and questions naming nodes the changes added or edited."""
    questions = [item.question for item in load_qa(SAMPLE_BUNDLE / "qa.jsonl")]
    named = [c["node"] for c in changes if c["op"] == "upsert_node"][::25]
    return questions + [f"Which {n['type'].replace('_', ' ')} is {n['name']}?" for n in named]


def _rankings(engine: EmbeddedEngine, questions: list[str]) -> dict[tuple[str, str], list[int]]:
    return {
        (strategy, q): [item.node_id for item in engine.ask(q, strategy=strategy, k=20).items]
        for strategy in STRATEGIES
        for q in questions
    }


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    return split_bundle(SAMPLE_BUNDLE, tmp_path_factory.mktemp("split"))


def test_a_change_stream_gives_the_index_of_a_fresh_ingest(split, tmp_path: Path) -> None:
    base, final, changes = split
    encoder = HashingEncoder()
    ingest(final, tmp_path / "fresh", encoder, progress=False)
    ingest(base, tmp_path / "live", encoder, progress=False)
    batches = [changes[: len(changes) // 3], changes[len(changes) // 3 :]]
    updater = IndexUpdater(tmp_path / "live", encoder)
    try:
        for number, batch in enumerate(batches, start=1):
            parsed = [(i, parse_change(c, "stream", i)) for i, c in enumerate(batch, start=1)]
            version, _ = updater.submit(parsed, "stream")
            assert version == number
            report = updater.snapshot()
            assert report is not None and report.version == number
            # only texts around the changes were encoded; the rest of the vectors were kept
            assert sum(report.encoded.values()) < sum(report.reused.values())
    finally:
        updater.close()
    fresh = EmbeddedEngine.open(tmp_path / "fresh", encoder=encoder)
    live = EmbeddedEngine.open(tmp_path / "live", encoder=encoder)
    questions = _questions(final, changes)
    expected = _rankings(fresh, questions)
    assert len(live.stores.nodes) == len(fresh.stores.nodes)
    assert live.stores.graph.num_edges == fresh.stores.graph.num_edges
    assert _rankings(live, questions) == expected
    answer = live.ask(questions[0], strategy="af")
    assert answer.kb_version == 2

    updater = IndexUpdater(tmp_path / "live", encoder)
    try:
        report, dropped = updater.compact()
    finally:
        updater.close()
    assert report is None and dropped == 2
    compacted = EmbeddedEngine.open(tmp_path / "live", encoder=encoder)
    assert _rankings(compacted, questions) == expected
    manifest = json.loads((tmp_path / "live" / "manifest.json").read_text())
    assert manifest["kb_version"] == 2 and manifest["counts"]["nodes"] == len(fresh.stores.nodes)


@pytest.mark.slow  # three CLI processes, each loading the encoder; CI runs it with the slow suites
def test_skbqa_update_and_compact_commands(biomed_sample_engine, tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    index = tmp_path / "index"
    shutil.copytree(biomed_sample_engine.stores.directory, index)
    name = "vorpalian cartilage dysplasia"
    changes = tmp_path / "changes.jsonl"
    node = {
        "id": 20_000_001,
        "type": "disease",
        "name": name,
        "attrs": {},
        "text": f"{name}: a rare bone disease.",
    }
    changes.write_text(json.dumps({"op": "upsert_node", "node": node}) + "\n")

    def skbqa(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "skbqa", *args], capture_output=True, text=True, timeout=300)

    applied = skbqa("update", str(changes), "--index", str(index), "--json", "--no-progress")
    assert applied.returncode == 0, applied.stderr
    summary = json.loads(applied.stdout)
    assert summary["version"] == 1 and summary["outcome"] == {"nodes added": 1}
    assert summary["texts_encoded"] == {"name": 1, "document": 1, "relations": 1}
    asked = skbqa("ask", name, "--index", str(index), "--strategy", "bm25", "--k", "1", "--json")
    assert asked.returncode == 0 and json.loads(asked.stdout)["items"][0]["node_id"] == 20_000_001
    compacted = skbqa("compact", "--index", str(index), "--no-progress")
    assert (
        compacted.returncode == 0
        and "at version 1" in compacted.stdout
        and "dropped 1 batches" in compacted.stdout
    )


@pytest.mark.slow  # a SAGE build; CI runs it with the slow suites
def test_a_sage_graph_is_rebuilt_for_the_new_snapshot(split, tmp_path: Path) -> None:
    from skbqa.strategies.sage.graph_build import SageBuildConfig, build_for_index
    from skbqa.strategies.sage.store import SageGraph

    base, _, changes = split
    encoder = HashingEncoder()
    ingest(base, tmp_path / "live", encoder, progress=False)
    build_for_index(tmp_path / "live", SageBuildConfig(percentile=90.0))
    updater = IndexUpdater(tmp_path / "live", encoder)
    try:
        updater.submit([(i, parse_change(c, "s", i)) for i, c in enumerate(changes[:50], start=1)], "s")
        report = updater.snapshot()
    finally:
        updater.close()
    assert report is not None and report.seconds["sage"] > 0
    live = EmbeddedEngine.open(tmp_path / "live", encoder=encoder)
    graph = SageGraph.load(tmp_path / "live")
    graph.check_built_for(live.stores.manifest, len(live.stores.nodes))  # built for this snapshot
    assert graph.meta["config"]["percentile"] == 90.0
    assert live.ask(_questions(base, [])[0], strategy="sage", k=5).items


def _export(updater: IndexUpdater, directory: Path) -> Path:
    """The updater's knowledge base as a bundle (what a user would re-ingest instead of streaming changes)."""
    state, schema = updater.state, updater.state.schema
    directory.mkdir()
    (directory / "schema.json").write_text((SAMPLE_BUNDLE / "schema.json").read_text())
    nodes = [
        {"id": i, "type": schema.node_types[r.type].name, "name": r.name, "attrs": r.attrs, "text": r.text}
        for i, r in sorted(state.nodes.items())
    ]
    edges = [{"src": s, "type": schema.edge_names[t], "dst": d} for s, t, d in sorted(state.edges)]
    (directory / "nodes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in nodes))
    (directory / "edges.jsonl").write_text("".join(json.dumps(e) + "\n" for e in edges))
    return directory


def test_edge_only_and_text_only_batches_keep_what_they_cannot_change(tmp_path: Path) -> None:
    """An edge-only batch keeps BM25 and the lexicon, a text-only one the lexicon; both still equal a fresh
    ingest of the changed knowledge base."""
    encoder = HashingEncoder()
    ingest(SAMPLE_BUNDLE, tmp_path / "live", encoder, progress=False)
    questions = _questions(SAMPLE_BUNDLE, [])
    updater = IndexUpdater(tmp_path / "live", encoder)
    try:
        edges = sorted(updater.state.edges)[::40]
        schema = updater.state.schema
        removed = [
            (i, parse_change({"op": "remove_edge", "src": s, "type": schema.edge_names[t], "dst": d}, "e", i))
            for i, (s, t, d) in enumerate(edges, start=1)
        ]
        updater.submit(removed, "e")
        edge_report = updater.snapshot()
        edited = [
            (
                i,
                parse_change(
                    {
                        "op": "upsert_node",
                        "node": {
                            "id": n,
                            "type": schema.node_types[r.type].name,
                            "name": r.name,
                            "attrs": r.attrs,
                            "text": "Corrected: " + r.text[:200],
                        },
                    },
                    "t",
                    i,
                ),
            )
            for i, (n, r) in enumerate(sorted(updater.state.nodes.items())[::30], start=1)
        ]
        updater.submit(edited, "t")
        text_report = updater.snapshot()
        final = _export(updater, tmp_path / "final")
    finally:
        updater.close()
    assert edge_report is not None and edge_report.copied == ["bm25", "lexicon"]
    assert text_report is not None and text_report.copied == ["lexicon"]
    ingest(final, tmp_path / "fresh", encoder, progress=False)
    fresh = EmbeddedEngine.open(tmp_path / "fresh", encoder=encoder)
    live = EmbeddedEngine.open(tmp_path / "live", encoder=encoder)
    assert _rankings(live, questions) == _rankings(fresh, questions)
