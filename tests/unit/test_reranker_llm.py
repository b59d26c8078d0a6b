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
from skbqa.query.context import Candidate, QueryContext
from skbqa.stages.rerank.base import Reranker
from skbqa.stages.rerank.descriptions import FittedPrompt, NodeDescriber
from skbqa.stages.rerank.llm_common import LlmRerankSettings, UsageMeter
from skbqa.stages.rerank.llm_listwise import ListwiseReranker
from skbqa.stages.rerank.llm_pairwise import PairwiseReranker
from skbqa.stages.rerank.llm_pointwise import SCORE_KEY, PointwiseReranker
from skbqa.stages.rerank.local import LocalReranker
from skbqa.stages.rerank.pairwise_sort import run_sync, sort_items
from skbqa.stages.rerank.prompts import POINTWISE, parse_choice, parse_ranking, parse_score
from skbqa.stages.rerank.registry import NoReranker, RerankerSettings, build_reranker
from skbqa.stores.index import IndexStores, open_index
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

    def __init__(
        self, reply: Reply, *, context_window: int = 200_000, delay: float = 0.0, slots: int | None = None
    ) -> None:
        self.context_window = context_window
        if slots is not None:  # like OpenAIChatModel.concurrency: the adapter's own request slots
            self.concurrency = slots
        self._reply = reply
        self._delay = delay
        self._lock = threading.Lock()
        self.prompts: list[str] = []
        self.max_tokens: list[int | None] = []
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
            self.max_tokens.append(max_tokens)
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


def query(**options: object) -> QueryContext:
    return QueryContext(QUESTION, HashingEncoder(), options=dict(options))


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
    # The one call raised: it is a failure, not an answered prompt, and cost no counted tokens.
    usage = outcome.usage
    assert (usage["prompts"], usage["failed"], usage["prompt_tokens"], usage["completion_tokens"]) == (0, 1, 0, 0)


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
    assert parse_score("no") is None and parse_score("<think>0.3") is None
    assert parse_score("7/10") == 0.7  # a fraction of a scale (it used to be refused)
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


# ---------------------------------------------------------------------------- measured with a small real LLM


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The gene is 0.0, and the score of this gene is: 1.", 1.0),  # the number after "score", not the first
        ("has a score of 2.5 out of 4", 0.625),  # "X out of N"
        ("TBC1 domain family member 1. Its score is 0.2", 0.2),  # digits of the name are not the score
        ("Confidence: 0.3 (the name mentions 0.9)", 0.3),
        ("Rating: 8/10", 0.8),
        ("Looks partial.\nI would say 0.9 then 0.4", 0.4),  # no keyword: last number of the last line
        ("0.6 looks right.\nDone.", 0.6),  # no number on the last line: the first one anywhere
        ("score of 3 out of 2 or so; 0.5", 0.5),  # an impossible fraction is not a score
    ],
)
def test_parse_score_prefers_the_stated_score(reply: str, expected: float) -> None:
    assert parse_score(reply) == expected


def test_parse_ranking_reads_only_standalone_integers() -> None:
    reply = (
        "The elements that participate in activation of GTPase activity are:\n"
        "1. ARL10C, Gie1; 2. GPN-loop GTPase 1 (GPRAG), P386R; 3. ADP ribosylation factor like GTPase 9B, RHO7; "
        "4. Rho family GTPase 2 (ARL2); 5. ..."
    )
    assert parse_ranking(reply, K) == [1, 2, 3, 4, 5]  # no 9 from "9B", no 10 / 386 / 7 from the names
    assert parse_ranking("2B, 3, 4.0, x5, 1", 5) == [3, 1]
    assert parse_choice("Option 7B is better than 3", 3, 7) == 3


def test_reply_budgets_are_sized_to_the_expected_answer(stores: IndexStores) -> None:
    expected = {PointwiseReranker: 64, PairwiseReranker: 32, ListwiseReranker: 8 * K + 32}
    for kind, budget in expected.items():
        chat = FakeChat(oracle_choice if kind is PairwiseReranker else oracle_ranking)
        if kind is PointwiseReranker:
            chat = FakeChat(oracle_score)
        reranker: Reranker = kind(stores, chat)
        reranker.rerank(query(), None, candidates(stores, PRIOR))
        assert chat.max_tokens and set(chat.max_tokens) == {budget}, kind
    listwise = ListwiseReranker(stores, FakeChat(oracle_ranking))
    assert listwise.reply_tokens(2) == 48 and listwise.reply_tokens(500) == 1024  # grows with k, capped
    assert ListwiseReranker(stores, FakeChat(oracle_ranking, context_window=300)).reply_tokens(K) == 150
    # A model that reasons first gets the budget it is configured with, for every prompt.
    thinking = FakeChat(oracle_ranking)
    ListwiseReranker(stores, thinking, LlmRerankSettings(reply_tokens=3000)).rerank(
        query(), None, candidates(stores, PRIOR)
    )
    assert thinking.max_tokens == [3000]


def test_listwise_prompt_keeps_full_descriptions_when_they_fit_beside_the_answer(stores: IndexStores) -> None:
    given = candidates(stores, PRIOR)
    probe = FakeChat(oracle_ranking)
    ListwiseReranker(stores, probe).rerank(query(), None, given)
    (full_prompt,) = probe.prompts
    # Room for the full prompt plus the 8·k + 32 reply budget, not for a reserve of half the window.
    chat = FakeChat(oracle_ranking, context_window=estimate_tokens(full_prompt) + 8 * K + 32)
    outcome = ListwiseReranker(stores, chat).rerank(query(), None, given)
    assert chat.prompts == [full_prompt]
    assert not any(key.startswith("fallback_") for key in outcome.usage)


@pytest.mark.parametrize("kind", [PointwiseReranker, ListwiseReranker, PairwiseReranker])
def test_request_deadline_option_overrides_the_settings(stores: IndexStores, kind: type) -> None:
    reranker: Reranker = kind(stores, FakeChat(lambda p, t: hang(t)), LlmRerankSettings(deadline=30.0))
    started = time.monotonic()
    outcome = reranker.rerank(query(rerank_deadline_s=0.3), None, candidates(stores, PRIOR))
    assert time.monotonic() - started < 1.5
    assert outcome.note == "deadline" and sorted(items_of(stores, outcome.candidates)) == list(range(K))


@pytest.mark.parametrize("kind", [PointwiseReranker, PairwiseReranker])
def test_request_concurrency_option_overrides_the_settings(stores: IndexStores, kind: type) -> None:
    chat = FakeChat(oracle_score if kind is PointwiseReranker else oracle_choice, delay=0.03)
    reranker: Reranker = kind(stores, chat, LlmRerankSettings(concurrency=8))
    outcome = reranker.rerank(query(rerank_concurrency=2, rerank_deadline_s=None), None, candidates(stores, PRIOR))
    assert chat.max_in_flight == 2
    assert items_of(stores, outcome.candidates) == by_relevance(PRIOR)


@pytest.mark.parametrize("kind", [PointwiseReranker, ListwiseReranker, PairwiseReranker])
@pytest.mark.parametrize(
    "options",
    [
        {"rerank_deadline_s": 0},
        {"rerank_deadline_s": -1.0},
        {"rerank_deadline_s": "5"},
        {"rerank_deadline_s": True},
        {"rerank_deadline_s": math.nan},
        {"rerank_deadline_s": math.inf},
        {"rerank_concurrency": 0},
        {"rerank_concurrency": 1.5},
        {"rerank_concurrency": "2"},
        {"rerank_concurrency": True},
    ],
)
def test_request_options_are_validated(stores: IndexStores, kind: type, options: dict[str, object]) -> None:
    chat = FakeChat(oracle_score)
    reranker: Reranker = kind(stores, chat)
    for given in (candidates(stores, PRIOR[:1]), candidates(stores, PRIOR)):  # also when there is nothing to do
        with pytest.raises(InvalidInputError, match="rerank_"):
            reranker.rerank(query(**options), None, given)
    assert chat.prompts == []


def test_usage_counts_answered_prompts_only_and_freezes_when_the_reranker_returns(stores: IndexStores) -> None:
    slow = set(PRIOR[::4])

    def reply(prompt: str, timeout: float | None) -> str:
        if int(ITEM.findall(prompt)[0]) in slow:
            time.sleep(0.6)  # answers, but only after the deadline
        return oracle_score(prompt, timeout)

    reranker = PointwiseReranker(stores, FakeChat(reply), LlmRerankSettings(deadline=0.3, concurrency=K))
    outcome = reranker.rerank(query(), None, candidates(stores, PRIOR))
    assert outcome.note == "deadline"
    reported = dict(outcome.usage)
    answered = K - len(slow)
    assert reported["prompts"] == answered and reported["prompt_tokens"] == 100 * answered
    assert (reported["abandoned"], reported["failed"], reported["skipped"]) == (len(slow), 0, 0)
    time.sleep(0.6)  # the late replies arrive now
    assert outcome.usage == reported


def test_usage_with_a_dead_backend_counts_one_failure_and_sends_nothing_more(stores: IndexStores) -> None:
    chat = FakeChat(fail)
    outcome = PointwiseReranker(stores, chat, LlmRerankSettings(concurrency=1)).rerank(
        query(), None, candidates(stores, PRIOR)
    )
    assert outcome.note == "llm error: boom"
    assert len(chat.prompts) == 1
    usage = outcome.usage
    assert (usage["prompts"], usage["failed"], usage["skipped"], usage["prompt_tokens"]) == (0, 1, K - 1, 0)


def test_fan_out_waits_for_the_adapters_slots_and_skips_what_the_deadline_left(stores: IndexStores) -> None:
    # The adapter has one request slot; jobs beyond it wait in the reranker, where the deadline skips them,
    # instead of inside the adapter, where each would count as a request and fail there.
    chat = FakeChat(lambda p, t: hang(t), slots=1)
    reranker = PointwiseReranker(stores, chat, LlmRerankSettings(deadline=0.3, concurrency=8))
    outcome = reranker.rerank(query(), None, candidates(stores, PRIOR))
    assert outcome.note == "deadline"
    assert len(chat.prompts) == 1 and chat.max_in_flight == 1
    usage = outcome.usage
    assert (usage["prompts"], usage["failed"] + usage["abandoned"], usage["skipped"]) == (0, 1, K - 1)


@pytest.mark.parametrize("kind", [PointwiseReranker, ListwiseReranker, PairwiseReranker])
def test_usage_accounts_for_every_queued_prompt(stores: IndexStores, kind: type) -> None:
    answer = {PointwiseReranker: oracle_score, ListwiseReranker: oracle_ranking, PairwiseReranker: oracle_choice}
    chat = FakeChat(answer[kind])
    usage = kind(stores, chat).rerank(query(), None, candidates(stores, PRIOR)).usage
    assert usage["prompts"] == len(chat.prompts) > 0
    assert usage["failed"] == usage["skipped"] == usage["abandoned"] == 0


def test_usage_meter_stops_sending_after_a_failure_and_ignores_late_activity() -> None:
    meter, fitted = UsageMeter(), FittedPrompt("p", "grounded")
    meter.queue(4)
    assert meter.begin(fitted) and meter.begin(fitted)
    meter.answered(10, 2)
    meter.failed()
    assert not meter.begin(fitted)  # a dead backend gets no further request
    usage = meter.close()
    assert usage == {
        "prompts": 1,
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "failed": 1,
        "skipped": 2,
        "abandoned": 0,
        "fallback_grounded": 2,
    }
    late = UsageMeter()
    late.queue(1)
    assert late.begin(FittedPrompt("p", "full"))
    frozen = late.close()
    late.answered(100, 50)  # the call abandoned at the deadline completes afterwards
    late.add("unparsed")
    assert frozen == late.close() == {**dict.fromkeys(frozen, 0), "abandoned": 1}
