"""Which records a view has seen, so that each page load reads only what was appended since
(one primary-key range, `Storage.list_verdict_facts_after`) and counts nothing twice. Pure.

A view remembers the highest sequence number it has seen (`last`) and the numbers below
it that it has not seen yet (`holes`). On SQLite numbers are taken inside the write lock,
so they commit in order and a hole is only an append that was rolled back. On PostgreSQL
a number is taken before its transaction commits: a record another transaction (this
process's or another replica's) was still writing when a newer one was read commits
later, below `last`. Each read therefore starts below the lowest hole, and a hole is
waited for `HOLE_GRACE_SECONDS` (an append's transaction lasts milliseconds); one never
filled (a rolled-back append) is then forgotten, and the view's periodic recount finds
it should it commit after all.

The numbers are the facts' (`verdict_facts`), whatever their repository or time: a
view of one repository still sees every number, so another repository's records are
never mistaken for holes after the first read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from bot.storage.base import VerdictFacts

HOLE_GRACE_SECONDS: Final = 60.0
MAX_HOLES: Final = 256
"""More than the appends a deployment has in flight at once (workers times replicas)."""
LOOKBACK: Final = 64
"""After a full read, the numbers just below the log's last that may still be in flight."""


@dataclass(frozen=True)
class Mark:
    last: int
    """The highest sequence number seen."""
    holes: tuple[tuple[int, float], ...] = ()
    """Numbers below `last` not seen yet, ascending, each with when it was first missed
    (`time.monotonic()`)."""

    def read_after(self) -> int:
        """Where the next read starts: below the lowest hole, else after `last`."""
        return self.holes[0][0] - 1 if self.holes else self.last


def unseen(mark: Mark, rows: Sequence[VerdictFacts]) -> list[VerdictFacts]:
    """The rows of a read from `mark.read_after()` that the view has not counted."""
    holes = {seq for seq, _ in mark.holes}
    return [row for row in rows if row.seq > mark.last or row.seq in holes]


def advance(mark: Mark, seen: Iterable[int], now: float) -> Mark:
    """The mark after a read from `mark.read_after()` returned `seen` (every number it
    returned): holes filled or too old are dropped, new gaps below the new last added."""
    returned = set(seen)
    last = max(returned, default=mark.last)
    last = max(last, mark.last)
    kept = [
        (seq, since)
        for seq, since in mark.holes
        if seq not in returned and now - since < HOLE_GRACE_SECONDS
    ]
    return Mark(last, _holes(kept, _gaps(mark.last, last, returned, now)))


def initial_mark(before: int, read: Iterable[int], now: float) -> Mark:
    """The mark of a full read: `before` is the log's last number, taken just before it;
    `read` the numbers it returned above `before - LOOKBACK` (of the view's repository and
    days only). Every number from there up that was not read is a hole: a record still
    being written, or one of another repository or of earlier days, which the next read
    returns once and the view's filter drops."""
    returned = set(read)
    last = max(max(returned, default=before), before)
    return Mark(last, _holes([], _gaps(before - LOOKBACK, last + 1, returned, now)))


def _gaps(low: int, high: int, returned: set[int], now: float) -> list[tuple[int, float]]:
    """The numbers strictly between `low` and `high` not returned; the newest `MAX_HOLES`
    at most (a long gap is a rolled-back batch or a sequence that jumped, not appends in
    flight)."""
    start = max(low + 1, high - MAX_HOLES, 1)
    return [(seq, now) for seq in range(start, high) if seq not in returned]


def _holes(*groups: list[tuple[int, float]]) -> tuple[tuple[int, float], ...]:
    merged = sorted(hole for group in groups for hole in group)
    return tuple(merged[-MAX_HOLES:])
