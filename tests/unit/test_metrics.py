from __future__ import annotations

import pytest

from skbqa.eval.metrics import mean_metrics, percentiles, question_metrics


def test_first_answer_at_rank_three() -> None:
    m = question_metrics([5, 6, 7, 8], [7, 99])
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0 and m["hit@20"] == 1.0
    assert m["recall@20"] == 0.5
    assert m["mrr"] == pytest.approx(1 / 3)


def test_recall_counts_only_the_top_twenty() -> None:
    ranked = list(range(100))
    m = question_metrics(ranked, [0, 19, 20, 50])
    assert m["recall@20"] == 0.5 and m["hit@1"] == 1.0 and m["mrr"] == 1.0


def test_mrr_looks_past_twenty_and_is_zero_when_absent() -> None:
    assert question_metrics(list(range(100)), [42])["mrr"] == pytest.approx(1 / 43)
    assert question_metrics([1, 2], [3]) == {
        "hit@1": 0.0,
        "hit@5": 0.0,
        "hit@20": 0.0,
        "recall@20": 0.0,
        "mrr": 0.0,
    }


def test_no_answers_is_an_error() -> None:
    with pytest.raises(ValueError):
        question_metrics([1], [])


def test_means_are_percentages_and_percentiles_interpolate() -> None:
    rows = [question_metrics([1], [1]), question_metrics([2], [1])]
    assert mean_metrics(rows)["hit@1"] == 50.0
    assert percentiles([1.0, 2.0, 3.0, 4.0])["p50"] == 2.5
    assert percentiles([]) == {"p50": 0.0, "p95": 0.0}
