"""One validation of request option names for every strategy (`check_request`), the af settings' own check, and
`clip`, the one cap on client input quoted in error messages."""

from __future__ import annotations

import pytest

from skbqa.common.errors import InvalidInputError, clip
from skbqa.engine.answers import check_request
from skbqa.engine.embedded import STRATEGY_NAMES
from skbqa.stages.config import AfConfig

STRATEGIES = dict.fromkeys(STRATEGY_NAMES)


def check(strategy: str, options: dict[str, object]) -> str:
    return check_request(STRATEGIES, strategy, 5, "which genes?", options)


@pytest.mark.parametrize(
    ("strategy", "options"),
    [
        ("bm25", {}),
        ("af", {"alpha": 0.5, "reranker": "local", "rerank_deadline_s": 2.0}),
        ("spark", {"strict": False, "deadline_s": 3.0}),
        ("grape", {"beam": 4, "fill": True}),
        ("sage", {"seed": "af", "policy": "always", "alpha": 0.5}),
        ("sage", {"seed": "hybrid", "seeds": 3}),
    ],
)
def test_options_a_strategy_reads_are_accepted(strategy: str, options: dict[str, object]) -> None:
    assert check(strategy, options) == "which genes?"


@pytest.mark.parametrize(
    ("strategy", "options", "message"),
    [
        ("bm25", {"bogus": 1}, "unknown bm25 option(s): bogus"),
        ("vss", {"alpha": 0.5}, "unknown vss option(s): alpha"),
        ("hybrid", {"k": 3}, "unknown hybrid option(s): k"),
        ("af", {"colour": "red"}, "unknown af option(s): colour"),
        ("spark", {"beam": 2}, "unknown spark option(s): beam"),
        ("grape", {"alpha": 0.5}, "unknown grape option(s): alpha"),
        ("sage", {"seed": "hybrid", "alpha": 0.5}, "unknown hybrid option(s): alpha"),
        ("sage", {"bogus": 1}, "unknown af option(s): bogus"),  # the default seed's options
        ("af", {"": 1}, "empty option name"),
        ("bm25", {"": 1}, "empty option name"),
    ],
)
def test_options_a_strategy_does_not_read_are_refused_by_name(
    strategy: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check(strategy, options)
    assert message in str(caught.value)


def test_a_long_unknown_name_is_capped() -> None:
    with pytest.raises(InvalidInputError) as caught:
        check("bm25", {"n" * 5000: 1})
    assert "n" * 80 not in str(caught.value) and "…" in str(caught.value)
    with pytest.raises(InvalidInputError) as caught:
        check_request(STRATEGIES, "s" * 5000, 5, "q")
    assert "s" * 80 not in str(caught.value) and "…" in str(caught.value)


def test_the_af_settings_name_an_empty_option_and_cap_values() -> None:
    with pytest.raises(InvalidInputError) as caught:
        AfConfig().with_options({"": 1})
    assert "empty option name" in str(caught.value)
    with pytest.raises(InvalidInputError) as caught:
        AfConfig().with_options({"steps": "z" * 5000})
    assert "z" * 80 not in str(caught.value) and "…" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("short", "short"),
        ("x" * 80, "x" * 80),
        ("x" * 81, "x" * 79 + "…"),
        ("a\nb\x00c", "a\\nb\\x00c"),  # one line: control characters escaped
        ("", ""),
    ],
)
def test_clip_caps_and_keeps_one_line(text: str, expected: str) -> None:
    assert clip(text) == expected
    assert len(clip(text * 1000)) <= 80 and clip(text * 1000).isprintable()
