"""The one composition of question → ranked answers with evidence, shared by the CLI, eval and tests.

It validates the request, runs the chosen strategy against the stores, and turns candidates (positions) into
answers (external ids, names, types, scores and a one-line reason).
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Mapping
from typing import Any

from skbqa.common.answer import Answer, AnswerItem
from skbqa.common.errors import InvalidInputError, clip
from skbqa.query.context import Candidate, QueryContext, Strategy
from skbqa.query.encoder import Encoder
from skbqa.stores.index import IndexStores
from skbqa.strategies.explain import reason

MAX_QUESTION_CHARS = 4000
MAX_RAW_QUESTION_CHARS = 2 * MAX_QUESTION_CHARS  # before normalisation (see clean_question)
MAX_K = 1000


def clean_question(question: object) -> str:
    """Normalise and check a question; control characters become spaces, empty or huge input is refused."""
    if not isinstance(question, str):
        raise InvalidInputError("the question must be a string")
    # Refuse huge input before normalising it: NFKC is quadratic in a run of combining marks (a 2 MB request of
    # them would take minutes). Whitespace and control characters may still shrink a text up to this to the limit.
    if len(question) > MAX_RAW_QUESTION_CHARS:
        raise InvalidInputError(
            f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}"
        )
    text = unicodedata.normalize("NFKC", question)
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Cs") else c for c in text)
    text = " ".join(text.split())
    if not text:
        raise InvalidInputError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidInputError(f"the question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return text


def check_request(
    strategies: Mapping[str, object],
    strategy: str,
    k: int,
    question: object,
    options: Mapping[str, Any] | None = None,
) -> str:
    """Validate a request's strategy, k and option names and return the cleaned question (InvalidInputError
    otherwise). Option values are the strategy's to check."""
    if strategy not in strategies:
        raise InvalidInputError(f"unknown strategy '{clip(strategy)}'; available: {', '.join(sorted(strategies))}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidInputError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
    if options:
        check_option_names(strategy, options)
    return clean_question(question)


def _option_names(strategy: str) -> tuple[str, ...] | None:
    """The option names `strategy` reads; None for one not listed here (it checks its options itself)."""
    if strategy in ("bm25", "vss", "hybrid"):
        return ()
    if strategy == "af":
        from skbqa.stages.config import REQUEST_OPTIONS

        return REQUEST_OPTIONS
    if strategy == "spark":
        from skbqa.strategies.spark.config import REQUEST_OPTIONS as SPARK_OPTIONS

        return SPARK_OPTIONS
    if strategy == "grape":
        from skbqa.strategies.grape.strategy import OPTIONS as GRAPE_OPTIONS

        return GRAPE_OPTIONS
    return None


def check_option_names(strategy: str, options: Mapping[str, Any]) -> None:
    """One check of option names for every strategy: an empty name, or one the strategy does not read, is refused
    by name (capped), never ignored. `sage` reads its own and hands the rest to its seed strategy."""
    if any(not name for name in options):
        raise InvalidInputError("'' is not an option (an empty option name)")
    if strategy == "sage":
        from dataclasses import fields

        from skbqa.strategies.sage.strategy import SageOptions

        own = {f.name for f in fields(SageOptions)} - {"base_options"}
        seed = options.get("seed", SageOptions.seed)
        if isinstance(seed, str) and seed != "sage":  # a bad seed is refused by the sage options themselves
            check_option_names(seed, {name: value for name, value in options.items() if name not in own})
        return
    known = _option_names(strategy)
    unknown = sorted(set(options) - set(known)) if known is not None else []
    if unknown:
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        takes = f"known: {', '.join(known)}" if known else f"{strategy} takes none"
        names = ", ".join(clip(name) for name in unknown[:3])
        raise InvalidInputError(f"unknown {strategy} option(s): {names}{more}; {takes}")


def answer(
    stores: IndexStores,
    strategies: Mapping[str, Strategy],
    encoder: Encoder,
    question: str,
    *,
    strategy: str,
    k: int = 20,
    options: Mapping[str, Any] | None = None,
) -> Answer:
    text = check_request(strategies, strategy, k, question, options)
    query = QueryContext(text, encoder, options=dict(options or {}))
    started = time.perf_counter()
    candidates = strategies[strategy].retrieve(query, k)[:k]
    return render(stores, query, strategy, k, candidates, started)


def render(
    stores: IndexStores, query: QueryContext, strategy: str, k: int, candidates: list[Candidate], started: float
) -> Answer:
    """Candidates (positions) → answers with external ids, names, types and a one-line reason; "total" is the
    time since `started` (perf_counter) in this process."""
    with query.stage("explain"):
        items = [_item(stores, query, rank, c) for rank, c in enumerate(candidates[:k], start=1)]
    timings = {name: round(seconds * 1000, 3) for name, seconds in query.timings.items()}
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    version = int(stores.manifest.get("kb_version", 0))
    return Answer(query.question, strategy, k, items, timings, query.notes, version)


def _item(stores: IndexStores, query: QueryContext, rank: int, candidate: Candidate) -> AnswerItem:
    nodes = stores.nodes
    p = candidate.position
    return AnswerItem(
        rank=rank,
        node_id=int(nodes.ids[p]),
        name=nodes.names[p],
        type=nodes.type_name(p),
        score=round(candidate.score, 6),
        source=candidate.source,
        why=reason(stores, query.question, candidate),
        scores={k: round(v, 6) for k, v in candidate.scores.items()},
        evidence=candidate.evidence,
    )
