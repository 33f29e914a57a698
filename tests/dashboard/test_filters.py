"""The query string, read strictly."""

from __future__ import annotations

import pytest

from bot.dashboard.filters import (
    DEFAULT_DAYS,
    MAX_DAYS,
    Filter,
    FilterError,
    day_choices,
    parse_filter,
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, Filter(None, DEFAULT_DAYS)),
        ({"repo": "", "days": ""}, Filter(None, DEFAULT_DAYS)),
        ({"repo": " octo/docs ", "days": "7"}, Filter("octo/docs", 7)),
        ({"repo": "Octo-Org/my.repo_1"}, Filter("Octo-Org/my.repo_1", DEFAULT_DAYS)),
        ({"days": "1"}, Filter(None, 1)),
        ({"days": str(MAX_DAYS)}, Filter(None, MAX_DAYS)),
    ],
)
def test_accepted(query: dict[str, str], expected: Filter) -> None:
    assert parse_filter(query) == expected


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"days": "0"}, "days must be"),
        ({"days": str(MAX_DAYS + 1)}, "days must be"),
        ({"days": "-3"}, "days must be"),
        ({"days": "7.5"}, "days must be"),
        ({"days": "²"}, "days must be"),
        ({"days": "99999"}, "days must be"),
        ({"repo": "octo"}, "OWNER/NAME"),
        ({"repo": "octo/docs/extra"}, "OWNER/NAME"),
        ({"repo": "<b>/x"}, "OWNER/NAME"),
        ({"repo": "a" * 101 + "/x"}, "OWNER/NAME"),
    ],
)
def test_refused(query: dict[str, str], words: str) -> None:
    with pytest.raises(FilterError, match=words):
        parse_filter(query)


def test_query_keeps_the_filter() -> None:
    chosen = Filter("Octo/Docs", 7)
    assert chosen.query() == "repo=Octo%2FDocs&days=7"
    assert chosen.query(repo="") == "days=7"
    assert chosen.query(days=30) == "repo=Octo%2FDocs&days=30"


def test_day_choices_hold_the_current_one() -> None:
    assert day_choices(14) == [1, 7, 14, 30, 90]
    assert day_choices(3) == [1, 3, 7, 14, 30, 90]
