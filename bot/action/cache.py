"""The verdict cache a run restores from the Actions cache: plain data nobody vouches for.

Any workflow that runs for a pull request can save an Actions cache entry in that pull
request's scope, one its author added in an earlier commit and removed later included, and
the restore step takes the newest entry it finds. So the restored file is never opened as
the run's storage, and nothing in it can make a `judge` check pass:

    restored file ── foreign_objects: anything the App's own schema does not have (a
                     trigger, a view, a table) ──> refused whole, one warning,
                     the run goes on with an empty cache
                  └─ take_in: only the verdict cache's entries and the usage counts are
                     copied, as data, into the run's fresh storage (its run state,
                     overrides, repository config and audit log are left behind: the run
                     reads those from GitHub); the verdicts only where the runner
                     trusts them: advisory mode with merge on accept off, where a verdict
                     can neither pass a gate nor start a merge (elsewhere every verdict is
                     this run's own)

The usage counts are copied whatever the mode: they can only hold spending back. The SQL
is storage's (bot/storage/sqlite_import.py); this module says what a run takes in.
"""

from __future__ import annotations

from pathlib import Path

from bot.judge.engine import CACHE_NAMESPACE
from bot.storage.sqlite_import import Restored, take_rows

RESTORED_SUFFIX = ".restored"


def set_aside(cache: Path) -> Path | None:
    """Move the restored file out of the way, so the run's storage starts empty."""
    if not cache.is_file():
        return None
    aside = cache.with_name(cache.name + RESTORED_SUFFIX)
    cache.replace(aside)
    return aside


def take_in(fresh: Path, restored: Path, *, verdicts: bool) -> Restored:
    """Copy the restored file's usage counts, and its verdict-cache entries if `verdicts`,
    into `fresh` (the run's storage, already made); refuse the file whole if it is not the
    App's schema or not a readable SQLite file. The restored file is removed either way."""
    return take_rows(fresh, restored, namespace=CACHE_NAMESPACE if verdicts else None)


def refused_line(refused: str) -> str:
    return f"the restored verdict cache was refused: {refused}; judging with an empty cache"
