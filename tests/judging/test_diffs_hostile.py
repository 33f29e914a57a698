"""Changes built to make a computed diff slow (bot/judging/diffs.py): a pusher chooses both
sides of it, since a push payload carries no patches. difflib took minutes on each of
these 8 to 120 KB changes, on the App's event loop; they now diff, or fall back to the
full file, in under a second, and the diffing runs on a worker thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import cast

import pytest

from bot.github.gateway import RepoGateway
from bot.github.review_query import HeadFacts, HeadQuery
from bot.github.types import ChangedPath, RemoteFile
from bot.judge.engine.review_context import FileDiff
from bot.judging import change_fetch, diffs
from bot.judging.diffs import NOTE_COMPUTED, NOTE_TOO_LARGE, file_diff
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from tests.support.hostile_runner import assert_each_finishes

MODULUS = 101
"""Every value recurs, each on fewer than 1 % of the lines: past 4,000 lines difflib's junk
heuristic was on, and it skips only lines more frequent than that."""


def _diffed(base: str, head: str) -> FileDiff | None:
    return file_diff(
        ChangedPath("f", "modified"),
        RemoteFile(head, "2"),
        RemoteFile(base, "1"),
        patches_listed=False,
    )


def _judged_whole(base: str, head: str) -> Callable[[], None]:
    def run() -> None:
        assert _diffed(base, head) == FileDiff(path="f", note=NOTE_TOO_LARGE)

    return run


def _diffed_with(base: str, head: str, deleted: int, inserted: int) -> Callable[[], None]:
    def run() -> None:
        found = _diffed(base, head)
        assert found is not None and found.note == NOTE_COMPUTED
        rows = found.diff.split("\n")
        assert sum(row.startswith("-") for row in rows) == deleted
        assert sum(row.startswith("+") for row in rows) == inserted

    return run


def _paragraphs(count: int) -> str:
    return "".join(f"\nparagraph {n}\n" for n in range(count))


def _modular(count: int, step: int) -> str:
    return "".join(f"{n * step % MODULUS}\n" for n in range(count))


HOSTILE_DIFFS: dict[str, Callable[[], None]] = {
    # 4,000 lines in all: one more and difflib's junk heuristic, on from there, would treat
    # "x" and the blank line as unmatchable and finish at once. Its time grows with the
    # cube: 1,000 lines took 11 s.
    "every other line made y, 2,000 lines": _diffed_with("x\n" * 2000, "x\ny\n" * 1000, 1000, 1000),
    "every other y made x, 2,000 lines": _diffed_with("x\ny\n" * 1000, "x\n" * 2000, 1000, 1000),
    "paragraphs replaced by blank lines, 1,333": _diffed_with(
        _paragraphs(1333), "\n" * 1333, 1333, 0
    ),
    # 10,000 lines took 33 s, 20,000 over 150 s.
    "lines each under 1 % frequent, 20,000": _judged_whole(
        _modular(20_000, 1), _modular(20_000, 7)
    ),
}


def test_hostile_changes_finish() -> None:
    assert_each_finishes("tests.judging.test_diffs_hostile", "HOSTILE_DIFFS")


class _HeadFactsOnly:
    """The one gateway call `read_head` makes: the head and base blobs it asks for."""

    def __init__(self, blobs: dict[str, RemoteFile]) -> None:
        self.blobs = blobs

    async def head_facts(self, query: HeadQuery) -> HeadFacts:
        return HeadFacts(blobs={e: self.blobs.get(e) for e in query.expressions})


async def test_diffs_are_computed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    real_unified = diffs.unified

    def recording_unified(old: str, new: str) -> str | None:
        threads.append(threading.current_thread())
        return real_unified(old, new)

    monkeypatch.setattr(diffs, "unified", recording_unified)
    target = Target(
        repository="o/r",
        installation_id=1,
        head_sha="head",
        default_branch="main",
        task="t",
        trigger="push",
        changed=(ChangedPath("f.py", "modified"),),
        commits=(),
        compare_base="base",
    )
    gateway = _HeadFactsOnly(
        {"head:f.py": RemoteFile("a\nB\nc\n", "2"), "base:f.py": RemoteFile("a\nb\nc\n", "1")}
    )
    read = await change_fetch.read_head(cast(RepoGateway, gateway), target, RepoConfig(), ["f.py"])
    assert read.diffs == {
        "f.py": FileDiff(path="f.py", diff="@@ -1,3 +1,3 @@\n a\n-b\n+B\n c", note=NOTE_COMPUTED)
    }
    assert len(threads) == 1 and threads[0] is not threading.current_thread()
