"""GitHub's own merge queue: whether a merge group needs the judges. Pure.

A merge group's head commit is its pull requests merged onto the base. When each of those
pull requests was accepted at the head the group merges, and the group brings no watched
change beyond theirs, the judges already read everything the group changes:

    every pull request accepted at its head, group's watched files ⊆ theirs ──> PASS
    the group changes no watched file (but not every pull request was accepted) ─> NOTHING
    anything else ──────────────────────────────────────────────────────────────> JUDGE
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.gfm import code, short_sha
from bot.github.types import ChangedPath
from bot.judging.repo_config import RepoConfig, select_files

# refs/heads/gh-readonly-queue/<base branch>/pr-<number>-<base sha>
_QUEUE_PULL = re.compile(r"/pr-(\d+)-[0-9a-f]{7,64}$")


class GroupPlan(enum.StrEnum):
    PASS = "pass"
    NOTHING = "nothing"
    JUDGE = "judge"


@dataclass(frozen=True)
class GroupPull:
    """One pull request of the group, as the group merges it: its head, the final verdict
    stored for that head (None: never judged), and the files it changes."""

    number: int
    head_sha: str
    verdict: str | None
    changed: tuple[ChangedPath, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"


@dataclass(frozen=True)
class GroupDecision:
    plan: GroupPlan
    unaccepted: tuple[int, ...] = ()
    """Pull requests not accepted at their head."""
    extra: tuple[str, ...] = ()
    """Watched paths the group changes that none of its pull requests did."""


def queued_pulls(head_ref: str) -> tuple[int, ...]:
    """The pull request a merge group's ref names (empty when the ref is not a queue's)."""
    match = _QUEUE_PULL.search(head_ref)
    return () if match is None else (int(match.group(1)),)


def watched_paths(config: RepoConfig, changed: Sequence[ChangedPath]) -> frozenset[str]:
    """Paths the judges would read: watched, not excluded, still present. Without the file
    limit: a file left out over the limit is still a change the judges never read."""
    unlimited = config.model_copy(
        update={"limits": config.limits.model_copy(update={"max_files": 10**9})}
    )
    return frozenset(f.path for f in select_files(unlimited, changed).files)


def decide_group(
    config: RepoConfig, pulls: Sequence[GroupPull], group_changed: Sequence[ChangedPath]
) -> GroupDecision:
    unaccepted = tuple(p.number for p in pulls if not p.accepted)
    group_watched = watched_paths(config, group_changed)
    theirs: frozenset[str] = frozenset().union(
        *(watched_paths(config, p.changed) for p in pulls if p.accepted)
    )
    extra = tuple(sorted(group_watched - theirs))
    if pulls and not unaccepted and not extra:
        return GroupDecision(GroupPlan.PASS)
    if not group_watched:
        return GroupDecision(GroupPlan.NOTHING, unaccepted)
    return GroupDecision(GroupPlan.JUDGE, unaccepted, extra)


def pass_summary(pulls: Sequence[GroupPull], head_sha: str) -> tuple[str, str]:
    """(title, summary) of a group completed from its pull requests' verdicts."""
    lines = [
        "## Verdict: accept",
        f"Merge group {code(short_sha(head_sha))}: every pull request in it was accepted at "
        "the head it merges, and the group changes no other watched file; "
        "no model was asked again.",
        "",
    ]
    lines += [f"- #{p.number}: **accept** at {code(short_sha(p.head_sha))}" for p in pulls]
    count = len(pulls)
    title = f"accept · {count} pull request{'s' if count != 1 else ''} accepted"
    return title, "\n".join(lines)
