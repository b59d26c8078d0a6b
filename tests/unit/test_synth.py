"""The synthetic SKB generator: loadable bundles, determinism, degree skew, and QA answers checked from scratch.

Answers are recomputed here from the loaded bundle (edges, attrs, texts) after parsing each question's text;
nothing in this file calls the generator's own answer code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skbqa.skb.bundle import load_bundle
from skbqa.skb.model import SKB
from skbqa.skb.qa import load_qa
from skbqa.synth.generator import SynthStats, generate

BUNDLE_FILES = ["schema.json", "nodes.jsonl.gz", "edges.jsonl.gz", "qa.jsonl"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthStats, SKB, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("synth") / "bundle"
    stats = generate(out, nodes=4000, seed=7, questions=240, edges_per_node=12.0)
    skb = load_bundle(out)
    qa = [json.loads(line) for line in (out / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    return out, stats, skb, qa


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> tuple[SynthStats, SKB]:
    out = tmp_path_factory.mktemp("synth20k") / "bundle"
    stats = generate(out, nodes=20_000, seed=3, questions=50)
    return stats, load_bundle(out)


# ------------------------------------------------------------------------------------------- bundle shape


def test_bundle_loads_and_matches_stats(small: tuple[Path, SynthStats, SKB, list[dict[str, Any]]]) -> None:
    out, stats, skb, qa = small
    assert sorted(p.name for p in out.iterdir()) == sorted(BUNDLE_FILES)
    assert skb.num_nodes == stats.nodes == 4000
    assert skb.num_edges == stats.edges
    assert stats.questions == len(qa) == 240
    assert set(skb.schema.node_type_names) == {"paper", "author", "institution", "venue", "field"}
    assert sorted(skb.schema.signatures("has_topic")) == [("paper", "field"), ("venue", "field")]
    for type_name, count in stats.node_counts.items():
        assert skb.nodes_of_type(type_name).size == count > 0
    for code, name in enumerate(skb.schema.edge_names):
        assert int((skb.edge_type == code).sum()) == stats.edge_counts[name] > 0
    # ≈ nodes * edges_per_node / 2, a little less after duplicate pairs are dropped
    assert 0.85 * 4000 * 12 / 2 <= skb.num_edges <= 4000 * 12 / 2 * 1.02
    items = load_qa(out / "qa.jsonl")
    assert len(items) == len(qa)
    for row in qa:
        assert set(row) == {"id", "question", "answers", "target_type", "kind"}


def test_names_unique_and_texts_sized(small: tuple[Path, SynthStats, SKB, list[dict[str, Any]]]) -> None:
    _, _, skb, _ = small
    for type_name in skb.schema.node_type_names:
        names = [skb.names[i] for i in skb.nodes_of_type(type_name)]
        assert len(set(names)) == len(names), type_name
        assert all(re.fullmatch(r"[A-Z][A-Za-z0-9 :.,-]+", n) for n in names), type_name
    lengths = np.array([len(t.split()) for t in skb.texts])
    assert lengths.min() >= 20 and lengths.max() <= 80
    for i in range(skb.num_nodes):
        assert skb.texts[i].startswith(skb.names[i])


def test_attributes_have_expected_types(small: tuple[Path, SynthStats, SKB, list[dict[str, Any]]]) -> None:
    _, _, skb, _ = small
    expected: dict[str, dict[str, type]] = {
        "paper": {"year": int, "language": str, "pages": int, "rating": float},
        "author": {"country": str, "career_start": int, "h_index": int},
        "institution": {"country": str, "founded": int, "students": int},
        "venue": {"kind": str, "established": int, "impact_factor": float},
        "field": {"level": int},
    }
    for type_name, spec in expected.items():
        for i in skb.nodes_of_type(type_name)[:200]:
            attrs = skb.attrs[i]
            assert set(attrs) == set(spec)
            for key, typ in spec.items():
                value = attrs[key]
                assert isinstance(value, typ) or (typ is float and isinstance(value, int)), (key, value)


# ------------------------------------------------------------------------------------------- determinism


def _bytes(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in BUNDLE_FILES}


def test_same_seed_gives_identical_bytes_and_other_seed_differs(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", nodes=1500, seed=11, questions=40)
    generate(tmp_path / "b", nodes=1500, seed=11, questions=40)
    generate(tmp_path / "c", nodes=1500, seed=12, questions=40)
    a, b, c = _bytes(tmp_path / "a"), _bytes(tmp_path / "b"), _bytes(tmp_path / "c")
    assert a == b
    for name in BUNDLE_FILES:
        if name != "schema.json":
            assert a[name] != c[name], name
    assert first.questions == 40


def test_output_does_not_depend_on_the_string_hash_seed(tmp_path: Path) -> None:
    code = "import sys; from pathlib import Path; from skbqa.synth.generator import generate; "
    code += "generate(Path(sys.argv[1]), nodes=1500, seed=5, questions=40)"
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", code, str(tmp_path / hash_seed)], check=True, env=env)
    assert _bytes(tmp_path / "1") == _bytes(tmp_path / "2")


def test_plain_output_replaces_stale_gzip_files(tmp_path: Path) -> None:
    generate(tmp_path, nodes=500, seed=1, questions=10)
    generate(tmp_path, nodes=600, seed=1, questions=10, gzip=False)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["edges.jsonl", "nodes.jsonl", "qa.jsonl", "schema.json"]
    assert load_bundle(tmp_path).num_nodes == 600


def test_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate(tmp_path, nodes=10, seed=0)
    with pytest.raises(ValueError):
        generate(tmp_path, nodes=1000, seed=0, edges_per_node=0)


# ------------------------------------------------------------------------------------------- 20k nodes


def test_twenty_thousand_nodes_with_skewed_degrees(medium: tuple[SynthStats, SKB]) -> None:
    stats, skb = medium
    assert skb.num_nodes == 20_000
    assert 0.85 * 20_000 * 20 / 2 <= skb.num_edges <= 20_000 * 20 / 2 * 1.02
    assert stats.questions == 50
    degree = np.bincount(skb.edge_src, minlength=skb.num_nodes) + np.bincount(
        skb.edge_dst, minlength=skb.num_nodes
    )
    assert degree.max() >= 20 * np.median(degree)
    for edge, end, type_name in [
        ("writes", "src", "author"),
        ("cites", "dst", "paper"),
        ("published_in", "dst", "venue"),
        ("affiliated_with", "dst", "institution"),
    ]:
        mask = skb.edge_type == skb.schema.edge_code(edge)
        ends = (skb.edge_src if end == "src" else skb.edge_dst)[mask]
        deg = np.bincount(ends, minlength=skb.num_nodes)[skb.nodes_of_type(type_name)]
        assert deg.max() >= 10 * max(np.median(deg), 1), edge
    for edge, type_name in [("writes", "author"), ("affiliated_with", "institution")]:
        mask = skb.edge_type == skb.schema.edge_code(edge)
        touched = np.union1d(skb.edge_src[mask], skb.edge_dst[mask])
        assert np.isin(skb.nodes_of_type(type_name), touched).all(), f"some {type_name} has no {edge} edge"


# ------------------------------------------------------------------------------------------- QA answers


class _Graph:
    """Independent views of a loaded SKB: name look-up per type and neighbour sets per edge name."""

    def __init__(self, skb: SKB) -> None:
        self.skb = skb
        self.by_name: dict[str, dict[str, int]] = defaultdict(dict)
        for i, name in enumerate(skb.names):
            self.by_name[skb.type_name(i)][name] = i
        self.out: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.inn: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
        for s, d, t in zip(skb.edge_src.tolist(), skb.edge_dst.tolist(), skb.edge_type.tolist(), strict=True):
            name = skb.schema.edge_names[t]
            self.out[name][s].add(d)
            self.inn[name][d].add(s)

    def node(self, type_name: str, name: str) -> int:
        return self.by_name[type_name][name]  # KeyError: this pattern does not fit the question

    def attr(self, node: int, key: str) -> Any:
        return self.skb.attrs[node][key]

    def mentions(self, node: int, word: str) -> bool:
        return word.lower() in re.findall(r"[a-z0-9]+", self.skb.texts[node].lower())

    def venue_of(self, paper: int) -> int:
        (venue,) = self.out["published_in"][paper]
        return venue


Solver = Callable[[_Graph, re.Match[str]], tuple[set[int], set[int] | None]]  # (answers, first constraint alone)


def _papers_by(g: _Graph, author: str) -> set[int]:
    return set(g.out["writes"][g.node("author", author)])


def _citing(g: _Graph, title: str) -> set[int]:
    return set(g.inn["cites"][g.node("paper", title)])


def _in_venue(g: _Graph, venue: str) -> set[int]:
    return set(g.inn["published_in"][g.node("venue", venue)])


def _members(g: _Graph, inst: str) -> set[int]:
    return set(g.inn["affiliated_with"][g.node("institution", inst)])


PATTERNS: dict[str, list[tuple[str, Solver]]] = {
    "relation": [
        (r"Which papers were written by (.+)\?", lambda g, m: (_papers_by(g, m[1]), None)),
        (r"Which papers cite (.+)\?", lambda g, m: (_citing(g, m[1]), None)),
        (r"Which authors are affiliated with (.+)\?", lambda g, m: (_members(g, m[1]), None)),
    ],
    "relation_and": [
        (
            r"Which papers were written by both (.+) and (.+)\?",
            lambda g, m: (_papers_by(g, m[1]) & _papers_by(g, m[2]), _papers_by(g, m[1])),
        ),
        (
            r"Which papers written by (.+) were published in (.+)\?",
            lambda g, m: (_papers_by(g, m[1]) & _in_venue(g, m[2]), _papers_by(g, m[1])),
        ),
        (
            r"Which papers written by (.+) are about (.+)\?",
            lambda g, m: (
                {p for p in _papers_by(g, m[1]) if g.node("field", m[2]) in g.out["has_topic"][p]},
                _papers_by(g, m[1]),
            ),
        ),
        (
            r"Which authors affiliated with (.+) wrote a paper published in (.+)\?",
            lambda g, m: (
                {
                    a
                    for a in _members(g, m[1])
                    if any(g.venue_of(p) == g.node("venue", m[2]) for p in g.out["writes"][a])
                },
                _members(g, m[1]),
            ),
        ),
    ],
    "attribute": [
        (
            r"Which papers written by (.+) were published (after|before) (\d+)\?",
            lambda g, m: (
                {
                    p
                    for p in _papers_by(g, m[1])
                    if (g.attr(p, "year") > int(m[3]) if m[2] == "after" else g.attr(p, "year") < int(m[3]))
                },
                _papers_by(g, m[1]),
            ),
        ),
        (
            r"Which papers published in (.+) are written in (\w+)\?",
            lambda g, m: ({p for p in _in_venue(g, m[1]) if g.attr(p, "language") == m[2]}, _in_venue(g, m[1])),
        ),
        (
            r"Which authors affiliated with (.+) have an h-index of at least (\d+)\?",
            lambda g, m: ({a for a in _members(g, m[1]) if g.attr(a, "h_index") >= int(m[2])}, _members(g, m[1])),
        ),
        (
            r"Which papers that cite (.+) have a rating above (\d+\.\d)\?",
            lambda g, m: ({p for p in _citing(g, m[1]) if g.attr(p, "rating") > float(m[2])}, _citing(g, m[1])),
        ),
    ],
    "keyword": [
        (
            r"Which papers written by (.+) mention (\w+)\?",
            lambda g, m: ({p for p in _papers_by(g, m[1]) if g.mentions(p, m[2])}, _papers_by(g, m[1])),
        ),
        (
            r"Which papers published in (.+) mention (\w+)\?",
            lambda g, m: ({p for p in _in_venue(g, m[1]) if g.mentions(p, m[2])}, _in_venue(g, m[1])),
        ),
        (
            r"Which papers that cite (.+) mention (\w+)\?",
            lambda g, m: ({p for p in _citing(g, m[1]) if g.mentions(p, m[2])}, _citing(g, m[1])),
        ),
    ],
}


def _solve(g: _Graph, kind: str, question: str) -> tuple[set[int], set[int] | None, str]:
    solutions = []
    for pattern, solver in PATTERNS[kind]:
        match = re.fullmatch(pattern, question)
        if match is None:
            continue
        try:
            answers, base = solver(g, match)
        except KeyError:  # a name that is not a node of the expected type: another pattern fits
            continue
        solutions.append((answers, base, pattern))
    assert len(solutions) == 1, f"{len(solutions)} interpretations of {question!r}"
    return solutions[0]


def test_every_answer_set_is_complete_and_exact(small: tuple[Path, SynthStats, SKB, list[dict[str, Any]]]) -> None:
    _, _, skb, qa = small
    g = _Graph(skb)
    patterns_used: set[str] = set()
    for row in qa:
        answers, base, pattern = _solve(g, row["kind"], row["question"])
        patterns_used.add(pattern)
        expected = sorted(int(x) for x in skb.ids(sorted(answers)))
        assert row["answers"] == expected, row
        assert 1 <= len(row["answers"]) <= 20, row
        if base is not None:  # every constraint narrows the answer
            assert len(answers) < len(base), row
        positions = skb.positions(row["answers"])
        assert {skb.type_name(int(p)) for p in positions} == {row["target_type"]}, row
    assert len(patterns_used) == sum(len(v) for v in PATTERNS.values()), "some question template never appeared"


def test_question_mix(small: tuple[Path, SynthStats, SKB, list[dict[str, Any]]]) -> None:
    _, _, _, qa = small
    kinds = [row["kind"] for row in qa]
    assert {k: kinds.count(k) for k in set(kinds)} == {k: 60 for k in PATTERNS}
    assert len({row["question"] for row in qa}) == len(qa)
    assert len({row["id"] for row in qa}) == len(qa)
    sizes = [len(row["answers"]) for row in qa]
    assert sum(s > 1 for s in sizes) >= len(sizes) // 3, "answer sets should not be mostly singletons"
