"""Which files a conflicting pull request and its base both changed, and how the comment
says it (bot/merging/conflicts.py)."""

from __future__ import annotations

import pytest

from bot.github.types import COMPARE_FILE_LIMIT, ChangedPath
from bot.merging.conflicts import (
    LISTED_PATHS,
    ChangedSide,
    conflict_candidates,
    conflict_files_text,
)


def side(*paths: str) -> ChangedSide:
    return ChangedSide(frozenset(paths))


CUT_SHORT = ChangedSide(frozenset({"a.md"}), complete=False)


@pytest.mark.parametrize(
    ("pull_side", "base_side", "candidates"),
    [
        (side("b.md", "a.md", "c.md"), side("c.md", "a.md", "z.md"), ("a.md", "c.md")),
        (side("a.md"), side("b.md"), ()),
        (side(), side("b.md"), ()),
        # GitHub could not compare one side, or cut its list short: unknown.
        (None, side("a.md"), None),
        (side("a.md"), None, None),
        (CUT_SHORT, side("a.md"), None),
        (side("a.md"), CUT_SHORT, None),
    ],
)
def test_conflict_candidates(
    pull_side: ChangedSide | None,
    base_side: ChangedSide | None,
    candidates: tuple[str, ...] | None,
) -> None:
    assert conflict_candidates(pull_side, base_side) == candidates


def test_a_side_counts_renames_under_both_names_and_knows_a_full_list() -> None:
    renamed = ChangedPath("docs/new.md", "renamed", previous_path="docs/old.md")
    changed = ChangedSide.of([renamed, ChangedPath("docs/a.md", "modified")])
    assert changed == ChangedSide(frozenset({"docs/new.md", "docs/old.md", "docs/a.md"}))
    full = [ChangedPath(f"f{i}", "added") for i in range(COMPARE_FILE_LIMIT)]
    assert not ChangedSide.of(full).complete
    assert ChangedSide.of(full[:-1]).complete


@pytest.mark.parametrize(
    ("candidates", "fragments"),
    [
        (
            ("docs/a.md", "docs/b.md"),
            ["Changed both here and on `main`", "`docs/a.md`, `docs/b.md`."],
        ),
        (None, ["Could not tell which files conflict", "unavailable or cut short"]),
        ((), ["Could not tell which files conflict", "no file changed both here and on `main`"]),
        (
            tuple(f"f{i:02}" for i in range(LISTED_PATHS + 3)),
            [f"`f{LISTED_PATHS - 1}`, and 3 more."],
        ),
        # Names come from people: shown exactly, never as Markdown.
        (("a`b*.md",), ["`` a`b*.md ``"]),
    ],
)
def test_conflict_files_text(candidates: tuple[str, ...] | None, fragments: list[str]) -> None:
    text = conflict_files_text(candidates, "main")
    for fragment in fragments:
        assert fragment in text
    assert f"`f{LISTED_PATHS}`" not in text
