"""Each judged file's diff: GitHub's patch, or computed where GitHub gave none."""

from __future__ import annotations

import pytest

from bot.github.types import ChangedPath, RemoteFile
from bot.judge.review_context import FileDiff
from bot.judging.diffs import (
    DIFF_INPUT_LIMIT,
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
    """difflib's junk heuristic would match nothing here and rewrite the whole file."""
    old = "".join("}\n\n" if n % 2 else "x = 1\n" for n in range(600))
    new = old.replace("x = 1\n", "x = 2\n", 1)
    assert unified(old, new) == "@@ -1,4 +1,4 @@\n-x = 1\n+x = 2\n }\n \n x = 1"


def test_very_long_files_still_diff() -> None:
    old = "".join(f"line {n}\n" for n in range(5000))
    assert unified(old, old.replace("line 7\n", "line seven\n")).startswith("@@ -5,7 +5,7 @@")


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
