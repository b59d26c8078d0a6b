"""Node texts of the synthetic graph, written with the nodes' JSON lines.

A text (20–80 words) is an intro sentence with the node's name and attributes followed by template sentences
whose slots hold topic nouns drawn 60% from the node's theme (papers: their first field's theme) and 40% from a
global Zipf distribution, so keyword constraints select small, meaningful subsets. Lines are `%`-formatted:
every generated string is escape-free by construction.
"""

from __future__ import annotations

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.attributes import _VENUE_KINDS
from skbqa.synth.graph import SynthGraph
from skbqa.synth.writer import _LineWriter, _Progress

_TEXT_MIN_WORDS, _TEXT_MAX_WORDS = 20, 80
_THEME_SHARE = 0.6  # share of text nouns drawn from the node's own theme
_CHUNK_NODES = 50_000


def _first_per_row(src: np.ndarray, values: np.ndarray, start: int, count: int, fill: int) -> np.ndarray:
    """values[i] of each row's first edge (edges sorted by src), `fill` for rows without edges."""
    out = np.full(count, fill, np.int64)
    rows, first = np.unique(src, return_index=True)
    out[rows - start] = values[first]
    return out


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
