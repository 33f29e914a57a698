"""The one `authors` rule, shared by the pre-push hook and `.github/judge.yml`."""

from __future__ import annotations

import pytest

from bot.judge.watched_authors import is_listed_author, normalise_author


@pytest.mark.parametrize(
    ("authors", "people", "expected"),
    [
        ([], ["anyone"], True),
        ([], [], True),
        (["OpenClaw Agent"], ["openclaw agent"], True),
        (["@octocat"], ["octocat"], True),
        (["octocat"], ["@OctoCat"], True),
        (["bot@agents.dev"], ["BOT@agents.dev"], True),
        (["OpenClaw Agent"], ["OpenClaw"], False),
        (["OpenClaw Agent"], ["", "someone"], False),
        (["  ", "@"], ["someone"], False),
        (["Straße"], ["STRASSE"], True),  # casefold, not lower
    ],
)
def test_is_listed_author(authors: list[str], people: list[str], expected: bool) -> None:
    assert is_listed_author(authors, people) is expected


def test_people_may_be_any_iterable() -> None:
    assert is_listed_author(["b"], (name for name in ["a", "b"]))


@pytest.mark.parametrize(
    ("raw", "normal"), [(" @octo ", "octo"), ("@ octo", "octo"), ("a@b.c", "a@b.c"), ("", "")]
)
def test_normalise_author(raw: str, normal: str) -> None:
    assert normalise_author(raw) == normal
