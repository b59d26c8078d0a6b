"""Synthetic STaRK-like SKB bundles of any size: a bibliographic graph with texts, attributes and QA.

Domain: `paper`, `author`, `institution`, `venue` and `field` nodes; edges `writes` (author → paper), `cites`
(paper → paper), `published_in` (paper → venue), `has_topic` (paper → field and venue → field: one name, two
signatures) and `affiliated_with` (author → institution). Targets of every edge are drawn with probability
proportional to a per-node Pareto "fitness", so in-degrees are heavy-tailed (a few prolific authors, highly
cited papers, big venues and fields) while most nodes have small degree; every author, venue, field and
institution gets at least one edge whenever the edge budget allows it.

Names come from syllable and word tables (`vocab.py`) through unique integer codes, so they are distinct per type
and pronounceable. Texts (20–80 words) are an intro sentence with the node's name and attributes followed by
template sentences whose slots hold topic nouns drawn 60% from the node's theme (papers: their first field's
theme) and 40% from a global Zipf distribution, so keyword constraints select small, meaningful subsets.

Everything is vectorised with numpy except the final per-line string formatting; JSON lines are written with
`%`-formatting (every generated string is escape-free by construction) and compressed with gzip level 1 in a
background thread. The output is byte-identical for equal arguments (gzip header with mtime 0 and no file name).
"""

from __future__ import annotations

import gzip as gzip_module
import json
import logging
import math
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.graph import Relation, SynthGraph
from skbqa.synth.questions import generate_questions

logger = logging.getLogger(__name__)

TYPE_NAMES = ["paper", "author", "institution", "venue", "field"]
_TYPE_DESCRIPTIONS = {
    "paper": "A research paper; name is its title, text its abstract.",
    "author": "A researcher who writes papers.",
    "institution": "A university or research institute that authors are affiliated with.",
    "venue": "A journal, conference or workshop where papers are published.",
    "field": "A field of study that papers and venues are about.",
}
# (name, source, target, description) in schema order; edge-name codes follow first appearance.
_EDGE_SIGNATURES = [
    ("writes", "author", "paper", "the author wrote the paper"),
    ("cites", "paper", "paper", "the first paper cites the second"),
    ("published_in", "paper", "venue", "the paper was published in the venue"),
    ("has_topic", "paper", "field", "the paper is about the field of study"),
    ("has_topic", "venue", "field", "the venue covers the field of study"),
    ("affiliated_with", "author", "institution", "the author is affiliated with the institution"),
]
_MIN_NODES = 100
_TEXT_MIN_WORDS, _TEXT_MAX_WORDS = 20, 80
_THEME_SHARE = 0.6  # share of text nouns drawn from the node's own theme
_CHUNK_NODES = 50_000
_CHUNK_EDGES = 500_000
_VENUE_KINDS = ["journal", "conference", "workshop"]


@dataclass
class SynthStats:
    out_dir: Path
    nodes: int
    edges: int
    questions: int
    node_counts: dict[str, int] = field(default_factory=dict)
    edge_counts: dict[str, int] = field(default_factory=dict)  # by edge name (signatures summed)
    bytes_written: int = 0
    seconds: float = 0.0


def generate(
    out_dir: Path,
    *,
    nodes: int,
    seed: int,
    questions: int = 200,
    edges_per_node: float = 20.0,
    gzip: bool = True,
    progress: bool = False,
) -> SynthStats:
    """Write a synthetic SKB bundle (`schema.json`, `nodes.jsonl[.gz]`, `edges.jsonl[.gz]`, `qa.jsonl`).

    `nodes` is the exact node count (at least 100). `edges_per_node` is the target average degree (in plus
    out, over all edge types): the bundle holds about `nodes * edges_per_node / 2` edges, a little less after
    duplicate pairs are dropped. A structural floor applies to small values: every paper has one venue, at
    least one author and at least one field, every author at least one institution and every venue at least
    one field. `questions` QA items are sampled (fewer only if the graph is too small to yield distinct ones).
    Same arguments ⇒ byte-identical files. Files are written under temporary names and renamed at the end.
    """
    if nodes < _MIN_NODES:
        raise ValueError(f"nodes must be at least {_MIN_NODES}, got {nodes}")
    if edges_per_node <= 0:
        raise ValueError(f"edges_per_node must be positive, got {edges_per_node}")
    if questions < 0:
        raise ValueError(f"questions must be >= 0, got {questions}")
    vocab.check_tables()
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = _Progress(progress, started)
    rng_names, rng_edges, rng_attrs, rng_texts, rng_qa = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )

    counts = _type_counts(nodes)
    offsets: dict[str, int] = {}
    start = 0
    for t in TYPE_NAMES:
        offsets[t] = start
        start += counts[t]
    graph = SynthGraph(list(TYPE_NAMES), counts, offsets)
    field_nouns, venue_nouns, venue_kinds = _make_names(graph, rng_names)
    say(f"names for {nodes:,} nodes")
    _make_edges(graph, rng_edges, edges_per_node)
    say(f"{sum(r.size for r in graph.relations):,} edges")
    _make_attrs(graph, rng_attrs, venue_kinds)
    say("attributes")

    suffix = ".jsonl.gz" if gzip else ".jsonl"
    nodes_path, edges_path = out_dir / f"nodes{suffix}", out_dir / f"edges{suffix}"
    qa_path, schema_path = out_dir / "qa.jsonl", out_dir / "schema.json"
    written = [nodes_path, edges_path, qa_path, schema_path]
    try:
        with _LineWriter(_tmp(nodes_path), gzip) as writer:
            _write_nodes_and_texts(graph, rng_texts, field_nouns, venue_nouns, writer, say)
        say("nodes written")
        with _LineWriter(_tmp(edges_path), gzip) as writer:
            _write_edges(graph, writer)
        say("edges written")
        items = generate_questions(graph, rng_qa, questions)
        with _LineWriter(_tmp(qa_path), False) as writer:
            writer.write("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items))
        say(f"{len(items)} questions")
        _tmp(schema_path).write_text(json.dumps(_schema(), indent=2) + "\n", encoding="utf-8")
    except BaseException:
        for path in written:
            _tmp(path).unlink(missing_ok=True)
        raise

    for path in written:
        os.replace(_tmp(path), path)
    other = ".jsonl" if gzip else ".jsonl.gz"
    for stem in ("nodes", "edges"):  # a stale sibling would shadow or confuse the loader
        (out_dir / f"{stem}{other}").unlink(missing_ok=True)

    edge_counts: dict[str, int] = {}
    for r in graph.relations:
        edge_counts[r.name] = edge_counts.get(r.name, 0) + r.size
    stats = SynthStats(
        out_dir=out_dir,
        nodes=nodes,
        edges=sum(edge_counts.values()),
        questions=len(items),
        node_counts=dict(counts),
        edge_counts=edge_counts,
        bytes_written=sum(p.stat().st_size for p in written),
        seconds=round(time.perf_counter() - started, 3),
    )
    say(f"done: {stats.bytes_written / 1e6:.1f} MB")
    return stats


# ----------------------------------------------------------------------------------------------- sizes


def _type_counts(nodes: int) -> dict[str, int]:
    n_m, n_n = len(vocab.MODIFIERS), len(vocab.NOUNS)
    syll = len(vocab.ONSETS) * len(vocab.VOWELS)
    caps = {
        "institution": syll**2 * len(vocab.PLACE_ENDINGS) * len(vocab.INSTITUTION_TEMPLATES) // 2,
        "venue": len(vocab.VENUE_TEMPLATES) * n_m * n_n // 2,
        "field": n_m * n_n + n_n * len(vocab.AREAS),
    }
    counts = {
        "institution": min(caps["institution"], max(3, round(nodes * 0.03))),
        "venue": min(caps["venue"], max(3, round(nodes * 0.02))),
        "field": min(caps["field"], max(4, round(nodes * 0.01))),
        "author": round(nodes * 0.36),
    }
    counts["paper"] = nodes - sum(counts.values())
    return {t: counts[t] for t in TYPE_NAMES}


# ----------------------------------------------------------------------------------------------- names


def _unique_codes(rng: np.random.Generator, space: int, k: int) -> np.ndarray:
    """k distinct integers in [0, space), in random order."""
    if k > space:
        raise ValueError(f"cannot draw {k} distinct names from a space of {space}")
    if space <= max(4 * k, 1 << 16):
        return rng.permutation(space)[:k].astype(np.int64)
    out = np.zeros(0, np.int64)
    while out.size < k:
        draw = rng.integers(0, space, size=(k - out.size) * 11 // 10 + 16, dtype=np.int64)
        merged = np.concatenate([out, draw])
        _, first = np.unique(merged, return_index=True)
        out = merged[np.sort(first)]
    return out[:k]


def _digits(codes: np.ndarray, radices: list[int]) -> list[list[int]]:
    """Mixed-radix decomposition, least significant first; each digit as a Python list."""
    rest = codes.copy()
    out: list[list[int]] = []
    for r in radices:
        out.append((rest % r).tolist())
        rest //= r
    return out


def _syllables() -> list[str]:
    return [o + v for o in vocab.ONSETS for v in vocab.VOWELS]


def _make_names(graph: SynthGraph, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Fill graph.names; return each field's and venue's topic noun index and each venue's kind."""
    syl = _syllables()
    ns = len(syl)
    nouns = [n.capitalize() for n in vocab.NOUNS]
    mods = [m.capitalize() for m in vocab.MODIFIERS]
    n_n, n_m = len(nouns), len(mods)
    names: list[str] = []

    # papers: "<Coined>: <title pattern>", coded over (coined, pattern, modifier, noun a, noun b != a)
    endings = vocab.COINED_ENDINGS
    radices = [ns, ns, len(endings), len(vocab.TITLE_TEMPLATES), n_m, n_n, n_n - 1]
    codes = _unique_codes(rng, math.prod(radices), graph.counts["paper"])
    s1, s2, e, t, m, a, b = _digits(codes, radices)
    names += [
        vocab.TITLE_TEMPLATES[ti].format(
            C=(syl[x] + syl[y] + endings[z]).capitalize(), M=mods[mi], A=nouns[ai], B=nouns[bi + (bi >= ai)]
        )
        for x, y, z, ti, mi, ai, bi in zip(s1, s2, e, t, m, a, b, strict=True)
    ]

    # authors: "<First> <Last>", first = 2 syllables + ending, last = 3 syllables + ending
    fe, le = vocab.FIRST_ENDINGS, vocab.LAST_ENDINGS
    radices = [ns, ns, len(fe), ns, ns, ns, len(le)]
    codes = _unique_codes(rng, math.prod(radices), graph.counts["author"])
    f1, f2, f3, l1, l2, l3, l4 = _digits(codes, radices)
    names += [
        f"{(syl[a1] + syl[a2] + fe[a3]).capitalize()} {(syl[b1] + syl[b2] + syl[b3] + le[b4]).capitalize()}"
        for a1, a2, a3, b1, b2, b3, b4 in zip(f1, f2, f3, l1, l2, l3, l4, strict=True)
    ]

    # institutions: pattern around a place name of 2 syllables + a place ending
    pe = vocab.PLACE_ENDINGS
    radices = [ns, ns, len(pe), len(vocab.INSTITUTION_TEMPLATES)]
    codes = _unique_codes(rng, math.prod(radices), graph.counts["institution"])
    p1, p2, p3, it = _digits(codes, radices)
    names += [
        vocab.INSTITUTION_TEMPLATES[ti].format(P=(syl[x] + syl[y] + pe[z]).capitalize())
        for x, y, z, ti in zip(p1, p2, p3, it, strict=True)
    ]

    # venues: pattern × modifier × noun
    radices = [len(vocab.VENUE_TEMPLATES), n_m, n_n]
    codes = _unique_codes(rng, math.prod(radices), graph.counts["venue"])
    vt, vm, vn = _digits(codes, radices)
    names += [
        vocab.VENUE_TEMPLATES[ti][0].format(M=mods[mi], A=nouns[ai]) for ti, mi, ai in zip(vt, vm, vn, strict=True)
    ]
    venue_kinds = [vocab.VENUE_TEMPLATES[ti][1] for ti in vt]

    # fields: "<Modifier> <Noun>" (codes below n_m*n_n) or "<Noun> <Area>"
    n_areas = len(vocab.AREAS)
    codes = _unique_codes(rng, n_m * n_n + n_n * n_areas, graph.counts["field"])
    field_nouns = np.where(codes < n_m * n_n, codes // n_m, (codes - n_m * n_n) // n_areas)
    names += [
        f"{mods[c % n_m]} {nouns[c // n_m]}"
        if c < n_m * n_n
        else f"{nouns[(c - n_m * n_n) // n_areas]} {vocab.AREAS[(c - n_m * n_n) % n_areas]}"
        for c in codes.tolist()
    ]

    graph.names = names
    return field_nouns.astype(np.int64), np.asarray(vn, np.int64), venue_kinds


# ----------------------------------------------------------------------------------------------- edges


def _fitness(rng: np.random.Generator, n: int, shape: float) -> np.ndarray:
    """Cumulative Pareto(shape) weights: sampling proportional to them gives power-law in-degrees."""
    return np.cumsum(rng.pareto(shape, n) + 1.0)


def _sample(rng: np.random.Generator, cum: np.ndarray, k: int, *, cover: bool = True) -> np.ndarray:
    """k local indices drawn ∝ fitness; with `cover`, min(k, n) random slots are rewritten so every index
    0..n-1 appears at least once when k >= n."""
    out = np.searchsorted(cum, rng.random(k) * cum[-1], side="right")
    np.minimum(out, cum.shape[0] - 1, out=out)
    if cover:
        n = cum.shape[0]
        m = min(k, n)
        out[rng.permutation(k)[:m]] = rng.permutation(n)[:m]
    return out.astype(np.int64)


def _dedup(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    keep = src != dst
    key = np.unique(src[keep] * num_nodes + dst[keep])
    return key // num_nodes, key % num_nodes


def _make_edges(graph: SynthGraph, rng: np.random.Generator, edges_per_node: float) -> None:
    c, o, n = graph.counts, graph.offsets, graph.num_nodes
    n_paper, n_author, n_venue = c["paper"], c["author"], c["venue"]
    papers = np.arange(n_paper, dtype=np.int64) + o["paper"]

    aff_counts = 1 + rng.binomial(1, 0.15, n_author)
    venue_topic_counts = 1 + rng.binomial(2, 0.4, n_venue)
    budget = round(graph.num_nodes * edges_per_node / 2)
    rest = budget - n_paper - int(aff_counts.sum()) - int(venue_topic_counts.sum())
    writes_total = max(n_paper, round(0.30 * rest))
    topics_total = max(n_paper, round(0.13 * rest))
    cites_total = max(0, rest - writes_total - topics_total)

    author_fit = _fitness(rng, n_author, 2.0)
    paper_fit = _fitness(rng, n_paper, 1.5)
    venue_fit = _fitness(rng, n_venue, 1.3)
    field_fit = _fitness(rng, c["field"], 1.3)
    inst_fit = _fitness(rng, c["institution"], 1.3)

    per_paper = 1 + rng.poisson(max(writes_total / n_paper - 1.0, 0.0), n_paper)
    w_paper = np.repeat(papers, per_paper)
    w_author = _sample(rng, author_fit, w_paper.size) + o["author"]
    writes = _dedup(w_author, w_paper, n)

    mean_cites = cites_total / n_paper
    if mean_cites > 0:
        per_paper = rng.negative_binomial(1.5, 1.5 / (1.5 + mean_cites), n_paper)
        c_src = np.repeat(papers, per_paper)
        c_dst = _sample(rng, paper_fit, c_src.size, cover=False) + o["paper"]
        cites = _dedup(c_src, c_dst, n)
    else:
        cites = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    pub = (papers, _sample(rng, venue_fit, n_paper) + o["venue"])

    per_paper = 1 + rng.poisson(max(topics_total / n_paper - 1.0, 0.0), n_paper)
    t_src = np.repeat(papers, per_paper)
    paper_topics = _dedup(t_src, _sample(rng, field_fit, t_src.size) + o["field"], n)

    v_src = np.repeat(np.arange(n_venue, dtype=np.int64) + o["venue"], venue_topic_counts)
    venue_topics = _dedup(v_src, _sample(rng, field_fit, v_src.size, cover=False) + o["field"], n)

    a_src = np.repeat(np.arange(n_author, dtype=np.int64) + o["author"], aff_counts)
    aff = _dedup(a_src, _sample(rng, inst_fit, a_src.size) + o["institution"], n)

    arrays = [writes, cites, pub, paper_topics, venue_topics, aff]
    graph.relations = [
        Relation(name, source, target, desc, s.astype(np.int64), d.astype(np.int64))
        for (name, source, target, desc), (s, d) in zip(_EDGE_SIGNATURES, arrays, strict=True)
    ]


# ----------------------------------------------------------------------------------------------- attributes


def _first_per_row(src: np.ndarray, values: np.ndarray, start: int, count: int, fill: int) -> np.ndarray:
    """values[i] of each row's first edge (edges sorted by src), `fill` for rows without edges."""
    out = np.full(count, fill, np.int64)
    rows, first = np.unique(src, return_index=True)
    out[rows - start] = values[first]
    return out


def _make_attrs(graph: SynthGraph, rng: np.random.Generator, venue_kinds: list[str]) -> None:
    c, o = graph.counts, graph.offsets
    n_paper, n_author = c["paper"], c["author"]
    country_p = 1.0 / np.arange(1, len(vocab.COUNTRIES) + 1) ** 0.9
    country_p /= country_p.sum()

    year = 2024 - np.minimum(np.floor(rng.exponential(9.0, n_paper)), 50).astype(np.int64)
    graph.attrs["paper"] = {
        "year": year,
        "language": rng.choice(len(vocab.LANGUAGES), n_paper, p=vocab.LANGUAGE_WEIGHTS),
        "pages": 4 + np.minimum(rng.poisson(9.0, n_paper), 56),
        "rating": np.clip(np.round(rng.normal(650, 150, n_paper)), 0, 1000).astype(np.int64),  # hundredths
    }

    writes = graph.relation("writes", "author", "paper")
    local = writes.src - o["author"]
    degree = np.bincount(local, minlength=n_author)
    first_year = np.full(n_author, 9999, np.int64)
    np.minimum.at(first_year, local, year[writes.dst - o["paper"]])
    fallback = 2024 - np.floor(rng.exponential(9.0, n_author)).astype(np.int64)
    first_year = np.where(degree > 0, first_year, fallback)
    h = np.floor(np.sqrt(degree) * rng.uniform(0.8, 2.2, n_author)).astype(np.int64)
    graph.attrs["author"] = {
        "country": rng.choice(len(vocab.COUNTRIES), n_author, p=country_p),
        "career_start": first_year - rng.integers(0, 6, n_author),
        "h_index": np.clip(h, np.minimum(degree, 1), degree),
    }

    n_inst = c["institution"]
    graph.attrs["institution"] = {
        "country": rng.choice(len(vocab.COUNTRIES), n_inst, p=country_p),
        "founded": 2020 - np.minimum(np.floor(rng.exponential(70.0, n_inst)), 600).astype(np.int64),
        "students": np.round(rng.lognormal(8.5, 1.0, n_inst)).astype(np.int64),
    }

    n_venue = c["venue"]
    kinds = np.array([_VENUE_KINDS.index(k) for k in venue_kinds], np.int64)
    graph.attrs["venue"] = {
        "kind": kinds,
        "established": 2020 - np.minimum(np.floor(rng.exponential(25.0, n_venue)), 120).astype(np.int64),
        "impact_factor": np.clip(np.round(rng.lognormal(0.8, 0.7, n_venue) * 100), 10, 9999).astype(np.int64),
    }
    graph.attrs["field"] = {"level": rng.choice(4, c["field"], p=[0.1, 0.3, 0.4, 0.2])}


# ----------------------------------------------------------------------------------------------- texts


def _homes(
    graph: SynthGraph, rng: np.random.Generator, field_nouns: np.ndarray, venue_nouns: np.ndarray
) -> dict[str, np.ndarray]:
    """Home noun (index into vocab.NOUNS) of every node, by type, local index."""
    c, o = graph.counts, graph.offsets
    n_nouns = len(vocab.NOUNS)
    pt = graph.relation("has_topic", "paper", "field")
    paper_home = _first_per_row(pt.src, field_nouns[pt.dst - o["field"]], o["paper"], c["paper"], -1)
    missing = paper_home < 0
    paper_home[missing] = rng.integers(0, n_nouns, int(missing.sum()))
    writes = graph.relation("writes", "author", "paper")
    order = np.argsort(writes.src, kind="stable")
    author_home = _first_per_row(
        writes.src[order], paper_home[writes.dst[order] - o["paper"]], o["author"], c["author"], -1
    )
    missing = author_home < 0
    author_home[missing] = rng.integers(0, n_nouns, int(missing.sum()))
    return {
        "paper": paper_home,
        "author": author_home,
        "institution": rng.integers(0, n_nouns, c["institution"]),
        "venue": venue_nouns,
        "field": field_nouns,
    }


def _texts(rng: np.random.Generator, intros: list[str], homes: np.ndarray, zipf_cum: np.ndarray) -> list[str]:
    """Intro + 2-slot template sentences; the sentence count keeps every text within 20..80 words."""
    words = np.fromiter((s.count(" ") + 1 for s in intros), np.int64, len(intros))
    u_min = np.maximum(2, -((words - _TEXT_MIN_WORDS) // vocab.BODY_MIN_WORDS))  # ceil((20 - w) / min)
    u_max = (_TEXT_MAX_WORDS - words) // vocab.BODY_MAX_WORDS
    if (u_min > u_max).any():
        raise AssertionError("an intro sentence is too long for the 80-word text limit")
    units = rng.integers(u_min, u_max + 1)
    n_units = int(units.sum())
    templates = rng.integers(0, len(vocab.BODY_TEMPLATES), n_units).tolist()
    slot_home = np.repeat(np.repeat(homes, units), 2)
    theme = slot_home - slot_home % vocab.THEME_SIZE + rng.integers(0, vocab.THEME_SIZE, 2 * n_units)
    global_pick = np.searchsorted(zipf_cum, rng.random(2 * n_units) * zipf_cum[-1], side="right")
    slots = np.where(rng.random(2 * n_units) < _THEME_SHARE, theme, np.minimum(global_pick, len(vocab.NOUNS) - 1))
    first, second = slots[0::2], slots[1::2]
    second = np.where(first == second, (second + 1) % len(vocab.NOUNS), second)
    nouns, tpl = vocab.NOUNS, vocab.BODY_TEMPLATES
    sentences = [
        tpl[t] % (nouns[a], nouns[b]) for t, a, b in zip(templates, first.tolist(), second.tolist(), strict=True)
    ]
    ends = np.cumsum(units).tolist()
    out: list[str] = []
    begin = 0
    for intro, end in zip(intros, ends, strict=True):
        out.append(intro + " " + " ".join(sentences[begin:end]))
        begin = end
    return out


def _place(country: str) -> str:
    return f"the {country}" if country.startswith(("United", "Netherlands")) else country


def _cents(values: np.ndarray) -> tuple[list[int], list[int]]:
    return (values // 100).tolist(), (values % 100).tolist()


def _write_nodes_and_texts(
    graph: SynthGraph,
    rng: np.random.Generator,
    field_nouns: np.ndarray,
    venue_nouns: np.ndarray,
    writer: _LineWriter,
    say: _Progress,
) -> None:
    homes = _homes(graph, rng, field_nouns, venue_nouns)
    zipf_w = 1.0 / (rng.permutation(len(vocab.NOUNS)) + 3.0)
    zipf_cum = np.cumsum(zipf_w)
    countries, languages = vocab.COUNTRIES, vocab.LANGUAGES
    names = graph.names
    texts: list[str] = []
    for type_name in graph.type_names:
        start, stop = graph.id_range(type_name)
        attrs = graph.attrs[type_name]
        for lo in range(start, stop, _CHUNK_NODES):
            hi = min(lo + _CHUNK_NODES, stop)
            a, b = lo - start, hi - start
            ids = range(lo, hi)
            chunk_names = names[lo:hi]
            if type_name == "paper":
                year = attrs["year"][a:b].tolist()
                lang = [languages[i] for i in attrs["language"][a:b].tolist()]
                pages = attrs["pages"][a:b].tolist()
                r_int, r_frac = _cents(attrs["rating"][a:b])
                intros = [f"{n}. A {y} paper in {la}." for n, y, la in zip(chunk_names, year, lang, strict=True)]
                chunk_texts = _texts(rng, intros, homes[type_name][a:b], zipf_cum)
                fmt = (
                    '{"id": %d, "type": "paper", "name": "%s", "attrs": {"year": %d, "language": "%s", '
                    '"pages": %d, "rating": %d.%02d}, "text": "%s"}\n'
                )
                rows = zip(ids, chunk_names, year, lang, pages, r_int, r_frac, chunk_texts, strict=True)
            elif type_name == "author":
                country = [countries[i] for i in attrs["country"][a:b].tolist()]
                since = attrs["career_start"][a:b].tolist()
                h_index = attrs["h_index"][a:b].tolist()
                intros = [
                    f"{n} is a researcher based in {_place(co)}, active since {s}."
                    for n, co, s in zip(chunk_names, country, since, strict=True)
                ]
                chunk_texts = _texts(rng, intros, homes[type_name][a:b], zipf_cum)
                fmt = (
                    '{"id": %d, "type": "author", "name": "%s", "attrs": {"country": "%s", "career_start": %d, '
                    '"h_index": %d}, "text": "%s"}\n'
                )
                rows = zip(ids, chunk_names, country, since, h_index, chunk_texts, strict=True)
            elif type_name == "institution":
                country = [countries[i] for i in attrs["country"][a:b].tolist()]
                founded = attrs["founded"][a:b].tolist()
                students = attrs["students"][a:b].tolist()
                intros = [
                    f"{n} is a research institution in {_place(co)}, founded in {f}."
                    for n, co, f in zip(chunk_names, country, founded, strict=True)
                ]
                chunk_texts = _texts(rng, intros, homes[type_name][a:b], zipf_cum)
                fmt = (
                    '{"id": %d, "type": "institution", "name": "%s", "attrs": {"country": "%s", "founded": %d, '
                    '"students": %d}, "text": "%s"}\n'
                )
                rows = zip(ids, chunk_names, country, founded, students, chunk_texts, strict=True)
            elif type_name == "venue":
                kind = [_VENUE_KINDS[i] for i in attrs["kind"][a:b].tolist()]
                est = attrs["established"][a:b].tolist()
                f_int, f_frac = _cents(attrs["impact_factor"][a:b])
                intros = [
                    f"{n} is a {k} established in {e}." for n, k, e in zip(chunk_names, kind, est, strict=True)
                ]
                chunk_texts = _texts(rng, intros, homes[type_name][a:b], zipf_cum)
                fmt = (
                    '{"id": %d, "type": "venue", "name": "%s", "attrs": {"kind": "%s", "established": %d, '
                    '"impact_factor": %d.%02d}, "text": "%s"}\n'
                )
                rows = zip(ids, chunk_names, kind, est, f_int, f_frac, chunk_texts, strict=True)
            else:
                level = attrs["level"][a:b].tolist()
                intros = [f"{n} is a field of study." for n in chunk_names]
                chunk_texts = _texts(rng, intros, homes[type_name][a:b], zipf_cum)
                fmt = '{"id": %d, "type": "field", "name": "%s", "attrs": {"level": %d}, "text": "%s"}\n'
                rows = zip(ids, chunk_names, level, chunk_texts, strict=True)
            writer.write("".join([fmt % row for row in rows]))
            texts += chunk_texts
        say(f"{type_name}: {stop - start:,} nodes")
    graph.texts = texts


def _write_edges(graph: SynthGraph, writer: _LineWriter) -> None:
    for r in graph.relations:
        fmt = '{"src": %d, "type": "' + r.name + '", "dst": %d}\n'
        for lo in range(0, r.size, _CHUNK_EDGES):
            src = r.src[lo : lo + _CHUNK_EDGES].tolist()
            dst = r.dst[lo : lo + _CHUNK_EDGES].tolist()
            writer.write("".join([fmt % pair for pair in zip(src, dst, strict=True)]))


def _schema() -> dict[str, Any]:
    return {
        "name": "synthetic-bibliography",
        "description": "Synthetic STaRK-like bibliographic SKB (papers, authors, institutions, venues, fields).",
        "node_types": [{"name": t, "description": _TYPE_DESCRIPTIONS[t], "name_attr": "name"} for t in TYPE_NAMES],
        "edge_types": [{"name": n, "source": s, "target": t, "description": d} for n, s, t, d in _EDGE_SIGNATURES],
    }


# ----------------------------------------------------------------------------------------------- output


def _tmp(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


class _LineWriter:
    """Encodes in the caller's thread, compresses and writes in a background thread (zlib releases the GIL)."""

    def __init__(self, path: Path, compress: bool) -> None:
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in __exit__
        self._gz = (
            gzip_module.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=1, mtime=0)
            if compress
            else None
        )
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="synth-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            if self._error is None:
                try:
                    (self._raw if self._gz is None else self._gz).write(data)
                except BaseException as exc:  # reported to the caller on the next write or at exit
                    self._error = exc

    def write(self, text: str) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(text.encode("utf-8"))

    def __enter__(self) -> _LineWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._gz is not None:
            self._gz.close()
        self._raw.close()
        if exc is None and self._error is not None:
            raise self._error


class _Progress:
    def __init__(self, enabled: bool, started: float) -> None:
        self._enabled = enabled
        self._started = started

    def __call__(self, message: str) -> None:
        line = f"[synth {time.perf_counter() - self._started:7.1f}s] {message}"
        logger.debug(line)
        if self._enabled:
            print(line, file=sys.stderr, flush=True)
