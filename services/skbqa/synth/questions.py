"""QA sampling over a generated graph: questions whose complete answer sets are computed from the graph.

Four kinds, each with several templates (target type in brackets):

* `relation` — one relational constraint through a named constant:
  papers written by <author> [paper]; papers that cite <paper title> [paper];
  authors affiliated with <institution> [author].
* `relation_and` — two relational constraints intersected:
  papers written by both <author> and <author> [paper]; papers written by <author> published in <venue> [paper];
  papers written by <author> about <field> [paper]; authors affiliated with <institution> who wrote a paper
  published in <venue> [author].
* `attribute` — a relation combined with an attribute filter:
  papers written by <author> published after / before <year> [paper]; papers published in <venue> written in
  <language> [paper]; authors affiliated with <institution> with an h-index of at least <k> [author];
  papers that cite <paper title> with a rating above <x> [paper].
* `keyword` — a relation combined with a keyword that must occur in the answer's text (as a whole word,
  case-insensitive): papers written by <author> / published in <venue> / citing <paper title> that mention <noun>.

Constants are sampled so that every answer set has 1–20 nodes and, for combined constraints, each constraint
removes something (the answer is a proper subset of what the first constraint alone allows). Uniformly drawn
anchors mostly give single answers, so each question first asks for a random minimum size (1, 2, 3 or 5) and
falls back to 1 when the graph offers nothing larger.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.graph import Adjacency, SynthGraph

MAX_ANSWERS = 20
KINDS = ["relation", "relation_and", "attribute", "keyword"]
_MAX_KEYWORD_CANDIDATES = 3000
_ATTEMPTS = 40
_MIN_SIZES = [1, 2, 3, 5]
_MIN_SIZE_P = [0.3, 0.25, 0.25, 0.2]
_WORD = re.compile(r"[a-z0-9]+")

Result = tuple[str, list[int], str] | None  # (question, answers, target type)


def text_words(text: str) -> set[str]:
    """The whole words of a text, lower-cased: what "mention <word>" is checked against."""
    return set(_WORD.findall(text.lower()))


class _Sampler:
    def __init__(self, graph: SynthGraph, rng: np.random.Generator) -> None:
        self.g = graph
        self.rng = rng
        self.min_answers = 1
        n = graph.num_nodes
        writes = graph.relation("writes", "author", "paper")
        cites = graph.relation("cites", "paper", "paper")
        pub = graph.relation("published_in", "paper", "venue")
        topics = graph.relation("has_topic", "paper", "field")
        aff = graph.relation("affiliated_with", "author", "institution")
        self.author_papers = Adjacency(writes.src, writes.dst, n)
        self.paper_authors = Adjacency(writes.dst, writes.src, n)
        self.cited_by = Adjacency(cites.dst, cites.src, n)
        self.venue_papers = Adjacency(pub.dst, pub.src, n)
        self.paper_venue = np.full(n, -1, np.int64)
        self.paper_venue[pub.src] = pub.dst
        self.paper_fields = Adjacency(topics.src, topics.dst, n)
        self.inst_authors = Adjacency(aff.dst, aff.src, n)
        self.author_insts = Adjacency(aff.src, aff.dst, n)
        self.p0 = graph.offsets["paper"]
        self.a0 = graph.offsets["author"]
        self._words: dict[int, set[str]] = {}
        self._nouns = set(vocab.NOUNS)

    # helpers

    def node(self, type_name: str) -> int:
        lo, hi = self.g.id_range(type_name)
        return int(self.rng.integers(lo, hi))

    def pick(self, arr: np.ndarray | list[int]) -> int:
        return int(arr[int(self.rng.integers(len(arr)))])

    def name(self, node: int) -> str:
        return self.g.names[node]

    def year(self, paper: int) -> int:
        return int(self.g.attrs["paper"]["year"][paper - self.p0])

    def words(self, node: int) -> set[str]:
        if node not in self._words:
            self._words[node] = text_words(self.g.texts[node])
        return self._words[node]

    def ok(self, answers: list[int], allowed: int | None = None) -> bool:
        """min_answers..MAX_ANSWERS answers, and fewer than `allowed` (what one constraint alone gives) if set."""
        return self.min_answers <= len(answers) <= MAX_ANSWERS and (allowed is None or len(answers) < allowed)

    # relation

    def papers_by_author(self) -> Result:
        a = self.node("author")
        ans = self.author_papers(a).tolist()
        return (f"Which papers were written by {self.name(a)}?", ans, "paper") if self.ok(ans) else None

    def papers_citing(self) -> Result:
        p = self.node("paper")
        ans = self.cited_by(p).tolist()
        return (f"Which papers cite {self.name(p)}?", ans, "paper") if self.ok(ans) else None

    def authors_at(self) -> Result:
        i = self.node("institution")
        ans = self.inst_authors(i).tolist()
        return (f"Which authors are affiliated with {self.name(i)}?", ans, "author") if self.ok(ans) else None

    # relation_and

    def coauthored(self) -> Result:
        p = self.node("paper")
        authors = self.paper_authors(p)
        if authors.size < 2:
            return None
        a, b = (int(x) for x in self.rng.choice(authors, 2, replace=False))
        pa = self.author_papers(a)
        ans = np.intersect1d(pa, self.author_papers(b)).tolist()
        if not self.ok(ans, pa.size):
            return None
        return f"Which papers were written by both {self.name(a)} and {self.name(b)}?", ans, "paper"

    def author_and_venue(self) -> Result:
        a = self.node("author")
        pa = self.author_papers(a)
        if pa.size < 2:
            return None
        v = int(self.paper_venue[self.pick(pa)])
        ans = pa[self.paper_venue[pa] == v].tolist()
        if not self.ok(ans, pa.size):
            return None
        return f"Which papers written by {self.name(a)} were published in {self.name(v)}?", ans, "paper"

    def author_and_field(self) -> Result:
        a = self.node("author")
        pa = self.author_papers(a)
        if pa.size < 2:
            return None
        f = self.pick(self.paper_fields(self.pick(pa)))
        ans = [int(p) for p in pa if f in self.paper_fields(int(p))]
        if not self.ok(ans, pa.size):
            return None
        return f"Which papers written by {self.name(a)} are about {self.name(f)}?", ans, "paper"

    def institution_and_venue(self) -> Result:
        a = self.node("author")
        i = self.pick(self.author_insts(a))
        members = self.inst_authors(i)
        pa = self.author_papers(a)
        if members.size < 2 or members.size > 2000 or pa.size == 0:
            return None
        v = int(self.paper_venue[self.pick(pa)])
        ans = [int(b) for b in members if (self.paper_venue[self.author_papers(int(b))] == v).any()]
        if not self.ok(ans, members.size):
            return None
        question = f"Which authors affiliated with {self.name(i)} wrote a paper published in {self.name(v)}?"
        return question, ans, "author"

    # attribute

    def author_and_year(self) -> Result:
        a = self.node("author")
        pa = self.author_papers(a)
        years = np.asarray([self.year(int(p)) for p in pa], np.int64)
        distinct = np.unique(years)
        if distinct.size < 2:
            return None
        if self.rng.random() < 0.5:
            y = int(self.pick(distinct[:-1]))
            ans = pa[years > y].tolist()
            question = f"Which papers written by {self.name(a)} were published after {y}?"
        else:
            y = int(self.pick(distinct[1:]))
            ans = pa[years < y].tolist()
            question = f"Which papers written by {self.name(a)} were published before {y}?"
        return (question, ans, "paper") if self.ok(ans, pa.size) else None

    def venue_and_language(self) -> Result:
        v = self.node("venue")
        pv = self.venue_papers(v)
        if pv.size < 2:
            return None
        lang = self.g.attrs["paper"]["language"][pv - self.p0]
        code = int(self.pick(lang))
        ans = pv[lang == code].tolist()
        if not self.ok(ans, pv.size):
            return None
        question = f"Which papers published in {self.name(v)} are written in {vocab.LANGUAGES[code]}?"
        return question, ans, "paper"

    def institution_and_h_index(self) -> Result:
        i = self.node("institution")
        members = self.inst_authors(i)
        h = self.g.attrs["author"]["h_index"][members - self.a0]
        distinct = np.unique(h)
        if distinct.size < 2:
            return None
        k = int(self.pick(distinct[1:]))
        ans = members[h >= k].tolist()
        if not self.ok(ans, members.size):
            return None
        return f"Which authors affiliated with {self.name(i)} have an h-index of at least {k}?", ans, "author"

    def citing_and_rating(self) -> Result:
        p = self.node("paper")
        citing = self.cited_by(p)
        if citing.size < 2:
            return None
        cents = self.g.attrs["paper"]["rating"][citing - self.p0]
        tenths = int(self.pick(cents)) // 10  # threshold x = tenths / 10; answer: rating > x
        ans = citing[cents > tenths * 10].tolist()
        if not self.ok(ans, citing.size):
            return None
        question = f"Which papers that cite {self.name(p)} have a rating above {tenths // 10}.{tenths % 10}?"
        return question, ans, "paper"

    # keyword

    def _keyword(self, candidates: np.ndarray) -> tuple[str, list[int]] | None:
        if candidates.size < 2 or candidates.size > _MAX_KEYWORD_CANDIDATES:
            return None
        words = [self.words(int(c)) for c in candidates]
        df: Counter[str] = Counter()
        for w in words:
            df.update(w & self._nouns)
        limit = min(MAX_ANSWERS, candidates.size - 1)
        eligible = sorted(w for w, n in df.items() if self.min_answers <= n <= limit)
        if not eligible:
            return None
        word = eligible[int(self.rng.integers(len(eligible)))]
        return word, [int(c) for c, w in zip(candidates, words, strict=True) if word in w]

    def author_keyword(self) -> Result:
        a = self.node("author")
        hit = self._keyword(self.author_papers(a))
        return (
            None if hit is None else (f"Which papers written by {self.name(a)} mention {hit[0]}?", hit[1], "paper")
        )

    def venue_keyword(self) -> Result:
        v = self.node("venue")
        hit = self._keyword(self.venue_papers(v))
        return (
            None
            if hit is None
            else (f"Which papers published in {self.name(v)} mention {hit[0]}?", hit[1], "paper")
        )

    def citing_keyword(self) -> Result:
        p = self.node("paper")
        hit = self._keyword(self.cited_by(p))
        return (
            None if hit is None else (f"Which papers that cite {self.name(p)} mention {hit[0]}?", hit[1], "paper")
        )


def _templates(s: _Sampler) -> dict[str, list[Callable[[], Result]]]:
    return {
        "relation": [s.papers_by_author, s.papers_citing, s.authors_at],
        "relation_and": [s.coauthored, s.author_and_venue, s.author_and_field, s.institution_and_venue],
        "attribute": [s.author_and_year, s.venue_and_language, s.institution_and_h_index, s.citing_and_rating],
        "keyword": [s.author_keyword, s.venue_keyword, s.citing_keyword],
    }


def generate_questions(graph: SynthGraph, rng: np.random.Generator, count: int) -> list[dict[str, Any]]:
    """`count` distinct questions, kinds in rotation; answers are external node ids (sorted ascending)."""
    if count == 0:
        return []
    sampler = _Sampler(graph, rng)
    templates = _templates(sampler)
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    failures = 0
    slot = 0
    while len(items) < count and failures < 4 * len(KINDS):
        kind = KINDS[slot % len(KINDS)]
        slot += 1
        found = None
        options = templates[kind]
        order = rng.permutation(len(options)).tolist()
        preferred = int(rng.choice(_MIN_SIZES, p=_MIN_SIZE_P))
        for min_answers in dict.fromkeys((preferred, 1)):
            sampler.min_answers = min_answers
            for t in order:
                for _ in range(_ATTEMPTS):
                    result = options[t]()
                    if result is not None and result[0] not in seen:
                        found = result
                        break
                if found is not None:
                    break
            if found is not None:
                break
        if found is None:
            failures += 1
            continue
        failures = 0
        question, answers, target = found
        seen.add(question)
        items.append(
            {
                "id": f"synth-{len(items):05d}",
                "question": question,
                "answers": sorted(int(a) for a in answers),
                "target_type": target,
                "kind": kind,
            }
        )
    return items
