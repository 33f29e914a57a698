"""Where a conflicting pull request can conflict: the files both it and its base changed. Pure.

GitHub says only that a pull request is `dirty`, not where. Its REST API gives the two
sides of a three-way merge, and a conflict can only be in a file both sides changed:

    this side   compare <base branch>...<head>    what the pull request changes since it
                                                  left the base (and that merge base)
    other side  compare <merge base>...<base>     what the base changed since then
    candidates  both sides' paths, intersected (a rename counts under both names)

A side GitHub could not compare, or cut short (a compare lists at most 300 files), makes
the answer unknown, and the comment says it could not tell which files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.gfm import code
from bot.github.types import COMPARE_FILE_LIMIT, ChangedPath

# Paths named in the comment; the rest are counted.
LISTED_PATHS = 30


@dataclass(frozen=True)
class ChangedSide:
    """The paths one side of the merge changed, and whether GitHub listed them all."""

    paths: frozenset[str]
    complete: bool = True

    @classmethod
    def of(cls, changed: Sequence[ChangedPath]) -> ChangedSide:
        paths = {c.path for c in changed} | {c.previous_path for c in changed if c.previous_path}
        return cls(frozenset(paths), complete=len(changed) < COMPARE_FILE_LIMIT)


def conflict_candidates(
    pull_side: ChangedSide | None, base_side: ChangedSide | None
) -> tuple[str, ...] | None:
    """The files changed on both sides, sorted; None when a side is unknown or cut short."""
    if pull_side is None or base_side is None:
        return None
    if not (pull_side.complete and base_side.complete):
        return None
    return tuple(sorted(pull_side.paths & base_side.paths))


def conflict_files_text(candidates: tuple[str, ...] | None, base: str) -> str:
    """The sentence of the conflict comment that says which files to look at."""
    if candidates is None:
        return (
            "Could not tell which files conflict: GitHub's comparison of the branches "
            "was unavailable or cut short."
        )
    if not candidates:
        return (
            "Could not tell which files conflict: GitHub's comparison shows no file "
            f"changed both here and on {code(base)} since this branch left it."
        )
    shown = ", ".join(code(path, 300) for path in candidates[:LISTED_PATHS])
    more = len(candidates) - LISTED_PATHS
    tail = f", and {more} more" if more > 0 else ""
    return f"Changed both here and on {code(base)} since this branch left it: {shown}{tail}."
