"""Each judged file's diff: GitHub's patch, or computed where GitHub gave none."""

from __future__ import annotations

import random
import re

import pytest

from bot.github.types import ChangedPath, RemoteFile
from bot.judge.engine.review_context import FileDiff
from bot.judging import diffs
from bot.judging.diffs import (
    DIFF_INPUT_LIMIT,
    MAX_EDIT_LINES,
    NOTE_COMPUTED,
    NOTE_NO_BASE,
    NOTE_PARTIAL,
    NOTE_TOO_LARGE,
    NOTE_TRUNCATED,
    base_paths,
    file_diff,
    unified,
)

OLD = RemoteFile("a\nb\nc\n", "1")
NEW = RemoteFile("a\nB\nc\n", "2")


def test_unified_has_hunks_and_no_file_headers() -> None:
    assert unified(OLD.text, NEW.text) == "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"
    assert unified("same\n", "same\n") == ""
    assert unified("a\n", "b\n") == "@@ -1 +1 @@\n-a\n+b"
    assert unified("", "a\n") == "@@ -0,0 +1 @@\n+a"


def test_a_one_line_change_in_a_long_repetitive_file_is_one_hunk() -> None:
    """Repeated lines (blank lines, closing braces) stay matchable: difflib's junk
    heuristic, when it was used, would have matched nothing here."""
    old = "".join("}\n\n" if n % 2 else "x = 1\n" for n in range(600))
    new = old.replace("x = 1\n", "x = 2\n", 1)
    assert unified(old, new) == "@@ -1,4 +1,4 @@\n-x = 1\n+x = 2\n }\n \n x = 1"


def test_very_long_files_still_diff() -> None:
    old = "".join(f"line {n}\n" for n in range(5000))
    diff = unified(old, old.replace("line 7\n", "line seven\n"))
    assert diff is not None and diff.startswith("@@ -5,7 +5,7 @@")


LINES = [f"line {n}" for n in range(1, 21)]


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("a\nb\nc\n", "a\nb\nX\nc\n", "@@ -1,3 +1,4 @@\n a\n b\n+X\n c"),
        ("a\nb\nc\nd\n", "a\nc\nd\n", "@@ -1,4 +1,3 @@\n a\n-b\n c\n d"),
        ("a\nb\nc\nd\n", "a\nX\nY\nd\n", "@@ -1,4 +1,4 @@\n a\n-b\n-c\n+X\n+Y\n d"),
        (
            _text(LINES[:8]),
            _text(["new", *LINES[1:8]]),
            "@@ -1,4 +1,4 @@\n-line 1\n+new\n line 2\n line 3\n line 4",
        ),
        (
            _text(LINES[:8]),
            _text([*LINES[:7], "new"]),
            "@@ -5,4 +5,4 @@\n line 5\n line 6\n line 7\n-line 8\n+new",
        ),
        (
            _text(LINES[:5]),
            _text([*LINES[:5], "more"]),
            "@@ -3,3 +3,4 @@\n line 3\n line 4\n line 5\n+more",
        ),
        ("", "a\nb\n", "@@ -0,0 +1,2 @@\n+a\n+b"),
        ("a\nb\n", "", "@@ -1,2 +0,0 @@\n-a\n-b"),
        ("", "", ""),
        (_text(LINES), _text(LINES), ""),
        ("a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n+c"),
        ("a\n\n\n\nb\n", "a\n\n\nb\n", "@@ -1,5 +1,4 @@\n a\n \n \n-\n b"),
    ],
    ids=[
        "insert-only",
        "delete-only",
        "replace-deletions-first",
        "edit-at-start",
        "edit-at-end",
        "append",
        "from-empty",
        "to-empty",
        "both-empty",
        "identical",
        "no-final-newline",
        "one-of-repeated-lines-removed-shows-the-last",
    ],
)
def test_unified_hunks(old: str, new: str, expected: str) -> None:
    """The same hunks difflib gave for these (each has a single shortest script, or
    difflib's pick among equals)."""
    assert unified(old, new) == expected


def test_changes_more_than_twice_the_context_apart_are_two_hunks() -> None:
    seven_between = _text(["first", *LINES[1:8], "ninth", *LINES[9:12]])
    assert unified(_text(LINES[:12]), seven_between) == (
        "@@ -1,4 +1,4 @@\n-line 1\n+first\n line 2\n line 3\n line 4\n"
        "@@ -6,7 +6,7 @@\n line 6\n line 7\n line 8\n-line 9\n+ninth\n line 10\n"
        " line 11\n line 12"
    )


def test_changes_within_twice_the_context_are_one_hunk() -> None:
    six_between = _text(["first", *LINES[1:7], "eighth", *LINES[8:12]])
    assert unified(_text(LINES[:12]), six_between) == (
        "@@ -1,11 +1,11 @@\n-line 1\n+first\n line 2\n line 3\n line 4\n line 5\n"
        " line 6\n line 7\n-line 8\n+eighth\n line 9\n line 10\n line 11"
    )


def test_a_rewrite_longer_than_the_edit_limit_still_diffs() -> None:
    """Lines found on one side only are edits in any script and are not searched."""
    old = _text([f"old {n}" for n in range(MAX_EDIT_LINES)])
    new = _text([f"new {n}" for n in range(MAX_EDIT_LINES)])
    diff = unified("keep\n" + old + "end\n", "keep\n" + new + "end\n")
    assert diff is not None
    assert diff.count("\n-old ") == diff.count("\n+new ") == MAX_EDIT_LINES


def _swapped_halves(half: int) -> tuple[RemoteFile, RemoteFile]:
    """Every shortest script deletes one half and inserts it again: 2 * half edits."""
    return RemoteFile("a\n" * half + "b\n" * half, "1"), RemoteFile(
        "b\n" * half + "a\n" * half, "2"
    )


def test_a_change_of_exactly_the_edit_limit_diffs() -> None:
    base, head = _swapped_halves(MAX_EDIT_LINES // 2)
    found = file_diff(ChangedPath("a", "modified"), head, base, patches_listed=False)
    assert found is not None and found.note == NOTE_COMPUTED
    assert found.diff.count("\n-") + found.diff.count("\n+") == MAX_EDIT_LINES


def test_a_change_past_the_edit_limit_is_judged_on_the_full_file() -> None:
    base, head = _swapped_halves(MAX_EDIT_LINES // 2 + 1)
    assert unified(base.text, head.text) is None
    assert file_diff(ChangedPath("a", "modified"), head, base, patches_listed=True) == FileDiff(
        path="a", note=NOTE_TOO_LARGE
    )


def test_a_search_past_its_step_budget_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few edits, but each costs a pass over the 200 lines between them."""
    old, new = "a\n" + "x\n" * 200 + "b\n", "b\n" + "x\n" * 200 + "a\n"
    assert unified(old, new) is not None
    monkeypatch.setattr(diffs, "MAX_DIFF_STEPS", 100)
    assert unified(old, new) is None


HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _patched(old: list[str], diff: str) -> list[str]:
    """`old` with the hunks applied, checking each hunk's context and counts as it goes."""
    result: list[str] = []
    position = 0
    hunks = re.split(r"(?m)^(?=@@ )", diff) if diff else []
    for hunk in filter(None, hunks):
        header, *rows = hunk.rstrip("\n").split("\n")
        found = HUNK_HEADER.fullmatch(header)
        assert found is not None, header
        old_length = int(found[2] or 1)
        new_length = int(found[4] or 1)
        start = int(found[1]) - 1 if old_length else int(found[1])
        assert start >= position
        result.extend(old[position:start])
        position = start
        assert sum(row[0] in " -" for row in rows) == old_length
        assert sum(row[0] in " +" for row in rows) == new_length
        for row in rows:
            if row[0] in " -":
                assert old[position] == row[1:]
                position += 1
            if row[0] in " +":
                result.append(row[1:])
    return result + old[position:]


def _shortest_edits(old: list[str], new: list[str]) -> int:
    """Deleted plus inserted lines of a shortest script, from the longest common subsequence."""
    longest = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i, line in enumerate(old):
        for j, other in enumerate(new):
            longest[i + 1][j + 1] = (
                longest[i][j] + 1 if line == other else max(longest[i][j + 1], longest[i + 1][j])
            )
    return len(old) + len(new) - 2 * longest[-1][-1]


def test_the_hunks_turn_the_old_text_into_the_new_with_the_fewest_edits() -> None:
    generator = random.Random(20240611)
    for _ in range(1500):
        alphabet = generator.choice([["a", "b"], ["a", "b", "c"], list("abcdefghij"), ["", "}"]])
        old = [generator.choice(alphabet) for _ in range(generator.randint(0, 25))]
        new = [generator.choice(alphabet) for _ in range(generator.randint(0, 25))]
        if generator.random() < 0.5:
            new = list(old)
            for _ in range(generator.randint(0, 5)):
                if new and generator.random() < 0.5:
                    del new[generator.randrange(len(new))]
                else:
                    new.insert(generator.randint(0, len(new)), generator.choice(alphabet))
        diff = unified(_text(old), _text(new))
        assert diff is not None
        assert _patched(old, diff) == new, (old, new, diff)
        edits = sum(row[:1] in ("-", "+") for row in diff.split("\n") if row[:2] != "@@")
        assert edits == _shortest_edits(old, new), (old, new, diff)
        if old == new:
            assert diff == ""


def test_base_paths_are_asked_for_only_where_a_patch_is_missing() -> None:
    changes = [
        ChangedPath("listed.py", "modified", patch="@@ -1 +1 @@"),
        ChangedPath("big.py", "modified"),
        ChangedPath("new.py", "renamed", previous_path="old.py"),
        ChangedPath("added.py", "added"),
        ChangedPath("gone.py", "removed"),
    ]
    assert base_paths(changes) == {"big.py": "big.py", "new.py": "old.py"}


@pytest.mark.parametrize(
    ("change", "head", "base", "listed", "expected"),
    [
        (ChangedPath("a", "added"), NEW, None, True, None),
        (ChangedPath("a", "modified"), None, OLD, True, None),
        (
            ChangedPath("a", "modified", patch="@@ x"),
            NEW,
            None,
            True,
            FileDiff(path="a", diff="@@ x"),
        ),
        (
            ChangedPath("a", "renamed", patch="", previous_path="b"),
            NEW,
            None,
            True,
            FileDiff(path="a", note="renamed from b without changes"),
        ),
        (
            ChangedPath("a", "modified"),
            NEW,
            OLD,
            True,
            FileDiff(path="a", diff=unified(OLD.text, NEW.text), note=NOTE_TRUNCATED),
        ),
        (
            ChangedPath("a", "modified"),
            NEW,
            OLD,
            False,
            FileDiff(path="a", diff=unified(OLD.text, NEW.text), note=NOTE_COMPUTED),
        ),
        (ChangedPath("a", "modified"), NEW, None, True, FileDiff(path="a", note=NOTE_NO_BASE)),
        (
            ChangedPath("a", "modified"),
            RemoteFile("a\nB\n", "2", truncated=True),
            OLD,
            True,
            FileDiff(
                path="a",
                diff=unified(OLD.text, "a\nB\n"),
                note=f"{NOTE_TRUNCATED}; {NOTE_PARTIAL}",
            ),
        ),
        (
            ChangedPath("a", "modified"),
            RemoteFile("x" * DIFF_INPUT_LIMIT, "2"),
            OLD,
            True,
            FileDiff(path="a", note=NOTE_TOO_LARGE),
        ),
    ],
    ids=[
        "added",
        "binary",
        "github-patch",
        "pure-rename",
        "truncated-by-github",
        "push-payload",
        "no-base",
        "partial-blob",
        "too-large",
    ],
)
def test_file_diff(
    change: ChangedPath,
    head: RemoteFile | None,
    base: RemoteFile | None,
    listed: bool,
    expected: FileDiff | None,
) -> None:
    assert file_diff(change, head, base, patches_listed=listed) == expected
