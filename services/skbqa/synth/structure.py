"""The synthetic bibliographic graph's structure: type sizes, node names, edges and the schema.

Domain: `paper`, `author`, `institution`, `venue` and `field` nodes; edges `writes` (author → paper), `cites`
(paper → paper), `published_in` (paper → venue), `has_topic` (paper → field and venue → field: one name, two
signatures) and `affiliated_with` (author → institution). Targets of every edge are drawn with probability
proportional to a per-node Pareto "fitness", so in-degrees are heavy-tailed while most nodes have small degree;
every author, venue, field and institution gets at least one edge whenever the edge budget allows it. Names come
from syllable and word tables (`vocab.py`) through unique integer codes, so they are distinct per type and
pronounceable.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.graph import Relation, SynthGraph

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


def _schema() -> dict[str, Any]:
    return {
        "name": "synthetic-bibliography",
        "description": "Synthetic STaRK-like bibliographic SKB (papers, authors, institutions, venues, fields).",
        "node_types": [{"name": t, "description": _TYPE_DESCRIPTIONS[t], "name_attr": "name"} for t in TYPE_NAMES],
        "edge_types": [{"name": n, "source": s, "target": t, "description": d} for n, s, t, d in _EDGE_SIGNATURES],
    }
