"""The LLM rerankers against scripted fake ChatModels over a small ingested index.

Twenty papers "Item 00".."Item 19" carry a hidden relevance; oracle fakes read the items out of each prompt and
answer as a perfect (transitive) judge would, so a correct reranker must reproduce the relevance order.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
import zlib
from collections.abc import Callable

import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.builder import ingest
from skbqa.models.chat import ChatMessage, ChatReply, LlmError, estimate_tokens
from skbqa.reranker.base import Reranker
from skbqa.reranker.descriptions import NodeDescriber
from skbqa.reranker.llm_common import LlmRerankSettings
from skbqa.reranker.llm_listwise import ListwiseReranker
from skbqa.reranker.llm_pairwise import PairwiseReranker
from skbqa.reranker.llm_pointwise import SCORE_KEY, PointwiseReranker
from skbqa.reranker.local import LocalReranker
from skbqa.reranker.pairwise_sort import run_sync, sort_items
from skbqa.reranker.prompts import POINTWISE, parse_choice, parse_ranking, parse_score
from skbqa.reranker.registry import NoReranker, RerankerSettings, build_reranker
from skbqa.stores.index import IndexStores, open_index
from skbqa.strategies.base import Candidate, QueryContext
from tests.helpers import HashingEncoder, write_bundle

K = 20
RELEVANCE = random.Random(7).sample(range(K), K)  # item i's hidden relevance; higher is better
QUESTION = "Which item answers the question best?"
ROW = re.compile(r"(\d+), paper, Item (\d+)\.")
ITEM = re.compile(r"Item (\d+)\.")

Reply = Callable[[str, float | None], str]


class FakeChat:
    """A scripted ChatModel: `reply(prompt, timeout)` decides the content; records prompts and concurrency."""

    name = "fake"

    def __init__(self, reply: Reply, *, context_window: int = 200_000, delay: float = 0.0) -> None:
        self.context_window = context_window
        self._reply = reply
        self._delay = delay
        self._lock = threading.Lock()
        self.prompts: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> ChatReply:
        prompt = messages[-1].content
        with self._lock:
            self.prompts.append(prompt)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._delay:
                time.sleep(self._delay)
            return ChatReply(self._reply(prompt, timeout), prompt_tokens=100, completion_tokens=3)
        finally:
            with self._lock:
                self.in_flight -= 1


def hang(timeout: float | None) -> str:
    """What a real adapter does when the endpoint never answers: wait out the timeout, then fail."""
    threading.Event().wait((timeout if timeout is not None else 5.0) + 0.05)
    raise LlmError("timed out")


def oracle_score(prompt: str, timeout: float | None) -> str:
    return f"{RELEVANCE[int(ITEM.findall(prompt)[0])] / K:.3f}"


def oracle_ranking(prompt: str, timeout: float | None) -> str:
    rows = {int(local): int(item) for local, item in ROW.findall(prompt)}
    return ", ".join(str(local) for local in sorted(rows, key=lambda lid: -RELEVANCE[rows[lid]]))


def oracle_choice(prompt: str, timeout: float | None) -> str:
    rows = {int(local): int(item) for local, item in ROW.findall(prompt)}
    return str(max(rows, key=lambda lid: RELEVANCE[rows[lid]]))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> IndexStores:
    root = tmp_path_factory.mktemp("rerank")
    papers = [
        {"id": 5000 + i, "type": "paper", "name": f"Item {i:02d}", "attrs": {"year": 2000 + i}, "text": "About."}
        for i in range(K)
    ]
    people = [
        {"id": 20, "type": "author", "name": "Ada Lovelace", "attrs": {}, "text": "Mathematician."},
        {"id": 30, "type": "field", "name": "chemistry", "attrs": {}, "text": "Matter."},
    ]
    edges = [{"src": 5000 + i, "type": "written_by", "dst": 20} for i in range(K)]
    edges += [{"src": 5000 + i, "type": "has_field", "dst": 30} for i in range(0, K, 2)]
    bundle = write_bundle(root / "bundle", nodes=papers + people, edges=edges, qa=[])
    ingest(bundle, root / "index", HashingEncoder(), progress=False)
    return open_index(root / "index")


def candidates(stores: IndexStores, items: list[int], **evidence: object) -> list[Candidate]:
    positions = stores.nodes.positions([5000 + i for i in items])
    return [Candidate(int(p), 1.0 - r / K, "test", evidence=dict(evidence)) for r, p in enumerate(positions)]


def items_of(stores: IndexStores, ranked: list[Candidate]) -> list[int]:
    return [int(stores.nodes.ids[c.position]) - 5000 for c in ranked]


def by_relevance(items: list[int]) -> list[int]:
    return sorted(items, key=lambda i: -RELEVANCE[i])


def query() -> QueryContext:
    return QueryContext(QUESTION, HashingEncoder())


PRIOR = random.Random(3).sample(range(K), K)  # the retrieval order the rerankers start from


# ------------------------------------------------------------------------------------------------- pointwise


def test_pointwise_sorts_by_score_with_prior_rank_breaking_ties(stores: IndexStores) -> None:
    chat = FakeChat(lambda p, t: "0.5" if int(ITEM.findall(p)[0]) in (PRIOR[3], PRIOR[9]) else oracle_score(p, t))
    outcome = PointwiseReranker(stores, chat).rerank(query(), None, candidates(stores, PRIOR))
    ranked = items_of(stores, outcome.candidates)
    scores = [c.scores[SCORE_KEY] for c in outcome.candidates]
    assert scores == sorted(scores, reverse=True)
    assert ranked.index(PRIOR[3]) + 1 == ranked.index(PRIOR[9])  # equal scores: prior rank decides
    assert outcome.note == "" and outcome.usage["prompts"] == K and outcome.usage["prompt_tokens"] == 100 * K
    assert sorted(int(ITEM.findall(p)[0]) for p in chat.prompts) == list(range(K))  # one prompt per candidate


def test_pointwise_unusable_replies_keep_their_slots(stores: IndexStores) -> None:
    garbage = {PRIOR[0], PRIOR[5], PRIOR[6]}
    chat = FakeChat(lambda p, t: "no idea" if int(ITEM.findall(p)[0]) in garbage else oracle_score(p, t))
    outcome = PointwiseReranker(stores, chat).rerank(query(), None, candidates(stores, PRIOR))
    ranked = items_of(stores, outcome.candidates)
    assert [ranked[i] for i in (0, 5, 6)] == [PRIOR[0], PRIOR[5], PRIOR[6]]
    others = [i for i in ranked if i not in garbage]
    assert others == by_relevance(others)
    assert outcome.usage["unparsed"] == 3


def test_pointwise_honours_the_concurrency_bound_and_uses_it(stores: IndexStores) -> None:
    chat = FakeChat(oracle_score, delay=0.05)
    settings = LlmRerankSettings(concurrency=3)
    outcome = PointwiseReranker(stores, chat, settings).rerank(query(), None, candidates(stores, PRIOR[:12]))
    assert chat.max_in_flight == 3
    assert items_of(stores, outcome.candidates) == by_relevance(PRIOR[:12])


def test_pointwise_deadline_returns_scored_ones_sorted_and_the_rest_in_place(stores: IndexStores) -> None:
    slow = set(PRIOR[::3])
    chat = FakeChat(lambda p, t: hang(t) if int(ITEM.findall(p)[0]) in slow else oracle_score(p, t))
    reranker = PointwiseReranker(stores, chat, LlmRerankSettings(deadline=0.4, concurrency=K))
    started = time.monotonic()
    outcome = reranker.rerank(query(), None, candidates(stores, PRIOR))
    assert time.monotonic() - started < 1.5
    assert outcome.note == "deadline"
    ranked = items_of(stores, outcome.candidates)
    assert all(ranked[i] == PRIOR[i] for i in range(0, K, 3))
    answered = [i for i in ranked if i not in slow]
    assert answered == by_relevance(answered)


def test_pointwise_backend_failure_is_noted_and_loses_no_candidate(stores: IndexStores) -> None:
    def reply(prompt: str, timeout: float | None) -> str:
        if int(ITEM.findall(prompt)[0]) == PRIOR[4]:
            raise LlmError("503 after 3 retries")
        return oracle_score(prompt, timeout)

    outcome = PointwiseReranker(stores, FakeChat(reply), LlmRerankSettings(concurrency=1)).rerank(
        query(), None, candidates(stores, PRIOR)
    )
    assert outcome.note == "llm error: 503 after 3 retries"
    assert sorted(items_of(stores, outcome.candidates)) == list(range(K))


# -------------------------------------------------------------------------------------------------- listwise


def test_listwise_uses_local_ids_and_follows_the_ranking(stores: IndexStores) -> None:
    chat = FakeChat(oracle_ranking)
    outcome = ListwiseReranker(stores, chat).rerank(query(), None, candidates(stores, PRIOR))
    assert items_of(stores, outcome.candidates) == by_relevance(PRIOR)
    (prompt,) = chat.prompts
    assert [int(local) for local, _ in ROW.findall(prompt)] == list(range(1, K + 1))
    assert "5000" not in prompt and QUESTION in prompt
    assert outcome.usage["prompts"] == 1


@pytest.mark.parametrize(
    ("reply", "expected_first"),
    [
        ("3, 3, 99, 0, 1", [2, 0]),  # duplicates and unknown ids ignored
        ("<think>maybe 7, then 2</think>4,2", [3, 1]),  # reasoning dropped
        ("1. 5\n2. 6\n3. 2", [4, 5, 1]),  # a numbered list is read as its items
        ("I cannot rank these.", []),  # nothing usable: prior order
    ],
)
def test_listwise_parses_defensively_and_appends_the_missing_in_prior_order(
    stores: IndexStores, reply: str, expected_first: list[int]
) -> None:
    outcome = ListwiseReranker(stores, FakeChat(lambda p, t: reply)).rerank(
        query(), None, candidates(stores, PRIOR)
    )
    ranked = items_of(stores, outcome.candidates)
    expected = [PRIOR[i] for i in expected_first] + [x for j, x in enumerate(PRIOR) if j not in expected_first]
    assert ranked == expected
    assert outcome.usage.get("unparsed", 0) == (0 if expected_first else 1)


def fail(prompt: str, timeout: float | None) -> str:
    raise LlmError("boom")


@pytest.mark.parametrize(("answer", "note"), [(lambda p, t: hang(t), "deadline"), (fail, "llm error: boom")])
def test_listwise_deadline_or_error_keeps_the_input_order(stores: IndexStores, answer: Reply, note: str) -> None:
    settings = LlmRerankSettings(deadline=0.3)
    started = time.monotonic()
    outcome = ListwiseReranker(stores, FakeChat(answer), settings).rerank(query(), None, candidates(stores, PRIOR))
    assert time.monotonic() - started < 1.5
    assert outcome.note == note and items_of(stores, outcome.candidates) == PRIOR


# -------------------------------------------------------------------------------------------------- pairwise


def _beats(hidden: list[int]) -> Callable[[int, int], bool]:
    return lambda a, b: hidden[a] > hidden[b]


def test_batched_insertion_sort_is_exact_under_a_transitive_oracle_with_fewer_rounds() -> None:
    for k in (0, 1, 2, 3, 7, 20, 33):
        for seed in range(40):
            hidden = random.Random(seed).sample(range(k), k)
            result, comparisons, rounds = run_sync(sort_items(list(range(k))), _beats(hidden))
            assert result == sorted(range(k), key=lambda i: -hidden[i])
            assert comparisons <= k * math.log2(max(k, 1)) + 1
            assert rounds <= comparisons
            if k >= 10:
                assert rounds < 0.6 * comparisons


def test_pairwise_sorts_concurrently_with_about_k_log_k_prompts(stores: IndexStores) -> None:
    chat = FakeChat(oracle_choice, delay=0.01)
    reranker = PairwiseReranker(stores, chat, LlmRerankSettings(concurrency=4))
    outcome = reranker.rerank(query(), None, candidates(stores, PRIOR))
    assert items_of(stores, outcome.candidates) == by_relevance(PRIOR)
    prompts, rounds = outcome.usage["prompts"], outcome.usage["rounds"]
    assert prompts == len(chat.prompts) <= K * math.log2(K)
    assert rounds < prompts / 2
    assert chat.max_in_flight == 4
    assert all(len(ROW.findall(p)) == 2 for p in chat.prompts) and "5000" not in chat.prompts[0]


def test_pairwise_unparseable_replies_keep_the_prior_order(stores: IndexStores) -> None:
    outcome = PairwiseReranker(stores, FakeChat(lambda p, t: "both are fine")).rerank(
        query(), None, candidates(stores, PRIOR)
    )
    assert items_of(stores, outcome.candidates) == PRIOR
    assert outcome.usage["unparsed"] == outcome.usage["prompts"] > 0


def test_pairwise_deadline_returns_the_sorted_prefix_then_the_rest_in_prior_order(stores: IndexStores) -> None:
    answered = 0
    lock = threading.Lock()

    def reply(prompt: str, timeout: float | None) -> str:
        nonlocal answered
        with lock:
            answered += 1
            fast = answered <= 5
        return oracle_choice(prompt, timeout) if fast else hang(timeout)

    settings = LlmRerankSettings(deadline=0.4, concurrency=2)
    started = time.monotonic()
    outcome = PairwiseReranker(stores, FakeChat(reply), settings).rerank(query(), None, candidates(stores, PRIOR))
    assert time.monotonic() - started < 1.5
    assert outcome.note == "deadline"
    ranked = items_of(stores, outcome.candidates)
    assert any(ranked == by_relevance(PRIOR[:prefix]) + PRIOR[prefix:] for prefix in range(2, K))


# ------------------------------------------------------------------------------------------ shared behaviour


def test_context_overflow_falls_back_to_grounded_relations(stores: IndexStores) -> None:
    ada = int(stores.nodes.positions([20])[0])
    with_field = [i for i in PRIOR if i % 2 == 0][:4]  # their full description also names the field
    given = candidates(stores, with_field, grounded_neighbours=[ada])
    descriptions = NodeDescriber(stores.nodes, stores.graph).describe(given)

    def tokens(text: str) -> int:
        return estimate_tokens(POINTWISE.format(node_type="paper", query=QUESTION, doc_info=text))

    grounded = max(tokens(d.grounded) for d in descriptions)
    assert grounded < min(tokens(d.full) for d in descriptions)
    reply_tokens = 100
    chat = FakeChat(oracle_score, context_window=grounded + reply_tokens)
    outcome = PointwiseReranker(stores, chat, LlmRerankSettings(reply_tokens=reply_tokens)).rerank(
        query(), None, given
    )
    assert outcome.usage["fallback_grounded"] == 4
    assert all("written by: Ada Lovelace" in p and "chemistry" not in p for p in chat.prompts)
    assert sorted(chat.prompts) == sorted(
        POINTWISE.format(node_type="paper", query=QUESTION, doc_info=d.grounded) for d in descriptions
    )


def _fuzzy(seed: int) -> FakeChat:
    choices = ["0.7", "1, 2, 2, 40", "3", "banana", "", "<think>", "-1", "2, 1", "7\n3", "1e-1", "80%"]

    def reply(prompt: str, timeout: float | None) -> str:
        return random.Random(zlib.crc32(f"{seed}:{prompt}".encode())).choice(choices)

    return FakeChat(reply)


@pytest.mark.parametrize("kind", [PointwiseReranker, ListwiseReranker, PairwiseReranker])
def test_no_reranker_ever_adds_or_drops_a_candidate(stores: IndexStores, kind: type) -> None:
    for seed in range(8):
        given = candidates(stores, random.Random(seed).sample(range(K), 1 + seed * 2))
        reranker: Reranker = kind(stores, _fuzzy(seed))
        ranked = reranker.rerank(query(), None, given).candidates
        assert sorted(c.position for c in ranked) == sorted(c.position for c in given)


def test_defensive_parsers() -> None:
    assert parse_score("The numeric score is: 0.85") == 0.85
    assert parse_score("Score (of 10): 8, i.e. 0.8") == 0.8
    assert parse_score("80%") == 0.8 and parse_score("<think>0.1</think> 1.0") == 1.0
    assert parse_score("no") is None and parse_score("7/10") is None and parse_score("<think>0.3") is None
    assert parse_ranking("ID 3, ID 1, 3.5, 2", 3) == [3, 1, 2]
    assert parse_choice("7", 3, 7) == 7 and parse_choice("Comparing 3 and 7:\nso 3.", 3, 7) == 3
    assert parse_choice("3 or 7", 3, 7) is None and parse_choice("12", 3, 7) is None


# -------------------------------------------------------------------------------------------------- registry


def test_registry_builds_each_reranker_and_refuses_what_it_cannot_build(stores: IndexStores) -> None:
    chat = FakeChat(oracle_score)
    assert isinstance(build_reranker("none", stores), NoReranker)
    assert isinstance(build_reranker("local", stores), LocalReranker)
    for name, kind in (
        ("pointwise", PointwiseReranker),
        ("listwise", ListwiseReranker),
        ("pairwise", PairwiseReranker),
    ):
        assert isinstance(build_reranker(name, stores, chat), kind)
        with pytest.raises(InvalidInputError, match="needs an LLM"):
            build_reranker(name, stores)
    with pytest.raises(InvalidInputError, match="unknown reranker"):
        build_reranker("magic", stores, chat)
    too_big = RerankerSettings(llm=LlmRerankSettings(reply_tokens=chat.context_window))
    with pytest.raises(InvalidInputError, match="reply_tokens"):
        build_reranker("listwise", stores, chat, too_big)
