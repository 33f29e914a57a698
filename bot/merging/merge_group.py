"""GitHub's own merge queue: which pull requests a merge group merges, and whether the group
needs the judges. Pure.

Which pull requests. GitHub names only the newest in the group's ref
(`gh-readonly-queue/<base>/pr-<number>-<sha>`). The group's head is built on its base
(`base_sha`, "the merge group's parent commit") one pull request at a time, so the group's
first-parent line from its head down to its base has one merge commit per pull request, and
each merge commit's second parent is that pull request's head. GitHub's
`GET .../commits/{sha}/pulls` then names the open pull request with that head. The ref's
number is added when the line did not name it (a squash or rebase queue writes commits with
one parent, whose pull requests cannot be told from the commits). A pull request this misses
cannot pass the group: its files' content at the group's head is nobody's accepted content.

Whether the judges are needed. A watched file's content at the group's head was read by the
judges when it is, blob for blob, the content an accepted pull request has at its head:

    every pull request accepted at its head, every watched file the group changes
    carried, unchanged, from one of them ──────────────────────────────────────> PASS
    the group changes no watched file (but not every pull request was accepted) ─> NOTHING
    anything else (an unaccepted pull request, a watched change besides theirs,
    a file two of them changed, merged into content no judge read) ─────────────> JUDGE

A pull request rejected at the head the group merges (by the judges or by a person's
override) fails the group outright, before anything above: judging the group again could
overturn a person's reject with a fresh accept.                     ─────────────> FAIL
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.gfm import code, short_sha
from bot.github.types import ChangedPath
from bot.judging.repo_config import RepoConfig, select_files

# refs/heads/gh-readonly-queue/<base branch>/pr-<number>-<base sha>
_QUEUE_PULL = re.compile(r"/pr-(\d+)-[0-9a-f]{7,64}$")


class GroupPlan(enum.StrEnum):
    PASS = "pass"
    NOTHING = "nothing"
    JUDGE = "judge"
    FAIL = "fail"


@dataclass(frozen=True)
class GroupPull:
    """One pull request of the group, as the group merges it: its head, the final verdict
    stored for that head (None: never judged), the files it changes and their blobs at its
    head (None: removed)."""

    number: int
    head_sha: str
    verdict: str | None
    changed: tuple[ChangedPath, ...] = ()
    blobs: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"


@dataclass(frozen=True)
class GroupDecision:
    plan: GroupPlan
    unaccepted: tuple[int, ...] = ()
    """Pull requests not accepted at their head."""
    extra: tuple[str, ...] = ()
    """Watched paths whose content at the group's head no accepted pull request has."""
    rejected: tuple[int, ...] = ()
    """Pull requests rejected at the head the group merges (FAIL)."""


def pulls_named_by_ref(head_ref: str) -> tuple[int, ...]:
    """The pull request a merge group's ref names (empty when the ref is not a queue's)."""
    match = _QUEUE_PULL.search(head_ref)
    return () if match is None else (int(match.group(1)),)


def merged_heads(parents: Mapping[str, Sequence[str]], base_sha: str, head_sha: str) -> list[str]:
    """The pull request heads the group's merge commits bring in, oldest first: the second
    parents along the first-parent line from `head_sha` down to `base_sha`. `parents` holds
    the commits the group adds (a compare of the two)."""
    heads: list[str] = []
    seen: set[str] = set()
    sha = head_sha
    while sha != base_sha and sha not in seen and parents.get(sha):
        seen.add(sha)
        line = parents[sha]
        heads.extend(line[1:2])
        sha = line[0]
    return heads[::-1]


def pull_with_head(candidates: Iterable[Mapping[str, Any]], head_sha: str, base: str) -> int | None:
    """The open pull request into `base` whose head is `head_sha`, among those GitHub
    associates with that commit."""
    for pull in candidates:
        head = pull.get("head") or {}
        target = pull.get("base") or {}
        if (
            pull.get("state") == "open"
            and head.get("sha") == head_sha
            and target.get("ref") == base
            and isinstance(pull.get("number"), int)
        ):
            return int(pull["number"])
    return None


def watched_paths(config: RepoConfig, changed: Sequence[ChangedPath]) -> frozenset[str]:
    """Paths the judges would read: watched, not excluded, still present."""
    return frozenset(f.path for f in select_files(config, changed).files)


_UNKNOWN = object()
REJECT = "reject"


def _carried(path: str, group_blobs: Mapping[str, str | None], pull: GroupPull) -> bool:
    theirs = pull.blobs.get(path, _UNKNOWN)
    return theirs is not _UNKNOWN and theirs == group_blobs.get(path, _UNKNOWN)


def decide_group(
    config: RepoConfig,
    pulls: Sequence[GroupPull],
    group_changed: Sequence[ChangedPath],
    group_blobs: Mapping[str, str | None],
    *,
    complete: bool = True,
) -> GroupDecision:
    """`group_blobs`: the blob each file the group changes has at its head (None: removed).
    `complete`: GitHub listed every file and commit of the group; when it may have cut
    them, what it left out is unknown, so the group is judged (never passed on the pull
    requests' verdicts, never "nothing to judge")."""
    rejected = tuple(p.number for p in pulls if p.verdict == REJECT)
    if rejected:
        return GroupDecision(GroupPlan.FAIL, rejected=rejected)
    unaccepted = tuple(p.number for p in pulls if not p.accepted)
    group_watched = watched_paths(config, group_changed)
    judged = [p for p in pulls if p.accepted]
    extra = tuple(
        sorted(
            path
            for path in group_watched
            if not any(
                path in watched_paths(config, p.changed) and _carried(path, group_blobs, p)
                for p in judged
            )
        )
    )
    if not complete:
        return GroupDecision(GroupPlan.JUDGE, unaccepted, extra)
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
        "the head it merges, and every watched file the group changes is one of theirs, "
        "unchanged; no model was asked again.",
        "",
    ]
    lines += [f"- #{p.number}: **accept** at {code(short_sha(p.head_sha))}" for p in pulls]
    count = len(pulls)
    title = f"accept · {count} pull request{'s' if count != 1 else ''} accepted"
    return title, "\n".join(lines)


def judge_reason(decision: GroupDecision) -> str:
    """Why the group's change goes to the judges (for the log)."""
    parts = []
    if decision.unaccepted:
        numbers = ", ".join(f"#{n}" for n in decision.unaccepted)
        parts.append(f"not accepted at their head: {numbers}")
    if decision.extra:
        parts.append(f"content no accepted pull request has: {', '.join(decision.extra)}")
    return "; ".join(parts) or "no pull request of the group was found"


def fail_summary(
    pulls: Sequence[GroupPull], rejected: Sequence[int], head_sha: str
) -> tuple[str, str]:
    """(title, summary) of a group failed because a pull request in it was rejected at the
    head the group merges: GitHub's queue drops the group."""
    lines = [
        "## Verdict: reject",
        f"Merge group {code(short_sha(head_sha))} merges a pull request rejected at that "
        "head (by the judges or by a person's override); the group is not judged again.",
        "",
    ]
    lines += [
        f"- #{p.number}: **{p.verdict or 'not judged'}** at {code(short_sha(p.head_sha))}"
        for p in pulls
    ]
    numbers = ", ".join(f"#{n}" for n in rejected)
    return f"reject · {numbers} rejected at the merged head", "\n".join(lines)
