"""What GitHub says about a change, as plain data (`bot/github/types.py`): changed paths read
from REST diff entries, and the lines a patch adds."""

from __future__ import annotations

from typing import Any

import pytest

from bot.github.types import ChangedPath, added_lines_from_patch, changed_from_diff_entry


def test_changed_file_from_diff_entry() -> None:
    entry: dict[str, Any] = {
        "sha": "bbcd538c8e72b8c175046e27cc8f907076331401",
        "filename": "docs/new.md",
        "status": "renamed",
        "previous_filename": "docs/old.md",
        "additions": 1,
    }
    assert changed_from_diff_entry(entry) == ChangedPath(
        "docs/new.md", "renamed", previous_path="docs/old.md"
    )
    removed = changed_from_diff_entry({"filename": "a.md", "status": "removed"})
    assert removed.removed
    assert removed.previous_path is None


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (None, None),
        ("@@ -0,0 +1,3 @@\n+a\n+b\n+c", [1, 2, 3]),
        ("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c", [2]),
        ("@@ -10,2 +20,3 @@\n x\n+y\n z\n\\ No newline at end of file", [21]),
        ("@@ -1 +1 @@\n-a\n+b\n@@ -50,1 +50,2 @@\n k\n+n", [1, 51]),
    ],
)
def test_added_lines_from_patch(patch: str | None, expected: list[int] | None) -> None:
    assert added_lines_from_patch(patch) == expected
