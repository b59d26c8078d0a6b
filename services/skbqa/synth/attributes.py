"""Attributes of the synthetic graph's nodes, drawn per type (years, countries, counts, ratings)."""

from __future__ import annotations

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.graph import SynthGraph

_VENUE_KINDS = ["journal", "conference", "workshop"]


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
