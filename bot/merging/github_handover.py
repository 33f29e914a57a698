"""Base branches that require GitHub's merge queue: the App hands them the pull requests its
judges accepted instead of merging them itself, and takes them out again.

    uses_github_queue   the branch's rules (`GET .../rules/branches/{branch}`) name
                        `merge_queue`; kept in kv `branch-rules` for RULES_FRESH, read again
                        when GitHub refuses a merge because the branch needs its queue (405)
    hand_over           `enqueuePullRequest` at the judged sha; remembered in kv
                        `github-merge-queue` (who, when, where GitHub put it)
    take_out            `dequeuePullRequest` when the verdict at that head is no accept any
                        more (a new head, a reject, an override, the hold label, closing...);
                        the record keeps why it left
    hand_over_refused_merge
                        the App's own queue met the 405 "must go through the merge queue":
                        the entry goes to GitHub's queue instead of spending attempts
    remember_group      the pull requests (at their heads) a merge group the App checked
                        merges, kept in kv `github-merge-groups` until the group is destroyed,
                        so a reject at one of those heads can fail the group (`group_runs`)
    prune               when a group is destroyed: records that left the queue LEFT_KEPT
                        ago, and group rows whose `destroyed` never came

GitHub refuses `dequeuePullRequest` while the entry is locked in a merge group being tested:
the record then stays queued with `pending_out` (why it must leave), and the take-out is
tried again when the group is destroyed or checks finish (`pending_take_outs`).

GitHub's queue then builds merge groups, which the App judges (`merge_group`).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.merging.github_calls import Answer, MergeCalls
from bot.merging.github_queue import (
    QueueAnswer,
    QueueOutcome,
    dequeue_pull_request,
    enqueue_pull_request,
)
from bot.merging.step import Drop
from bot.storage.base import MergeEntry, Storage

log = logging.getLogger(__name__)

RULES_NAMESPACE = "branch-rules"
HANDED_NAMESPACE = "github-merge-queue"
GROUPS_NAMESPACE = "github-merge-groups"
# Rules change rarely and a stale "no queue" costs one 405 (which reads them again); a stale
# "queue" costs one refused enqueue (which reads them again too).
RULES_FRESH = timedelta(minutes=10)
# Records of pull requests that left GitHub's queue stay for the dashboard's history this
# long; a group row whose `destroyed` never came, until GitHub's longest check timeout
# (six hours) has long run out.
LEFT_KEPT = timedelta(days=30)
GROUP_KEPT = timedelta(days=1)


def has_merge_queue(rules: Iterable[Mapping[str, Any]]) -> bool:
    """Whether GitHub's answer for a branch's rules includes the merge queue."""
    return any(rule.get("type") == "merge_queue" for rule in rules)


@dataclass(frozen=True)
class BranchRules:
    """Whether a branch's rules name the merge queue, as GitHub said at `checked_at`
    (kv `branch-rules`)."""

    merge_queue: bool
    checked_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {"merge_queue": self.merge_queue, "checked_at": self.checked_at.isoformat()}

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> BranchRules | None:
        """None for a row without a readable time: it is read from GitHub again."""
        try:
            checked = datetime.fromisoformat(str(stored["checked_at"]))
        except (KeyError, ValueError):
            return None
        return cls(merge_queue=bool(stored.get("merge_queue")), checked_at=checked)


def cached_rules(stored: BranchRules | None, now: datetime) -> bool | None:
    """The cached answer while it is fresh, else None (read GitHub)."""
    if stored is None:
        return None
    checked = stored.checked_at
    if now - checked >= RULES_FRESH or checked > now:
        return None
    return stored.merge_queue


def requires_queue(answer: Answer) -> bool:
    """GitHub's 405 for a branch whose rules send every merge through its merge queue
    ("Changes must be made through the merge queue")."""
    return answer.status == 405 and "merge queue" in answer.message.lower()


def _rules_key(repository: str, branch: str) -> str:
    return f"{repository.lower()}:{branch}"


async def _load_rules(storage: Storage, repository: str, branch: str) -> BranchRules | None:
    stored = await storage.kv_get(RULES_NAMESPACE, _rules_key(repository, branch))
    return None if stored is None else BranchRules.of(stored)


async def _save_rules(storage: Storage, repository: str, branch: str, rules: BranchRules) -> None:
    await storage.kv_put(RULES_NAMESPACE, _rules_key(repository, branch), rules.as_json())


async def uses_github_queue(
    storage: Storage, calls: MergeCalls, branch: str, now: datetime, *, refresh: bool = False
) -> bool:
    if not refresh:
        cached = cached_rules(await _load_rules(storage, calls.full_name, branch), now)
        if cached is not None:
            return cached
    queue = has_merge_queue(await calls.branch_rules(branch))
    await _save_rules(storage, calls.full_name, branch, BranchRules(queue, now))
    return queue


async def forget_rules(storage: Storage, repository: str, branch: str, now: datetime) -> None:
    """GitHub said the branch has no merge queue: remember that (until RULES_FRESH)."""
    await _save_rules(storage, repository, branch, BranchRules(False, now))


class HandoverState(enum.StrEnum):
    QUEUED = "queued"
    LEFT = "left"
    MERGED = "merged"


@dataclass(frozen=True)
class HandedOver:
    """A pull request the App put in GitHub's merge queue, and what became of it."""

    repository: str
    pull_number: int
    base_branch: str
    sha: str
    node_id: str
    actor: str
    enqueued_at: datetime
    state: HandoverState = HandoverState.QUEUED
    position: int | None = None
    eta_seconds: int | None = None
    jump: bool = False
    left_reason: str = ""
    left_at: datetime | None = None
    pending_out: str = ""
    """Why the App must take it out, while GitHub refused the take-out (a locked entry)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "pull_number": self.pull_number,
            "base_branch": self.base_branch,
            "sha": self.sha,
            "node_id": self.node_id,
            "actor": self.actor,
            "enqueued_at": self.enqueued_at.isoformat(),
            "state": self.state.value,
            "position": self.position,
            "eta_seconds": self.eta_seconds,
            "jump": self.jump,
            "left_reason": self.left_reason,
            "left_at": None if self.left_at is None else self.left_at.isoformat(),
            "pending_out": self.pending_out,
        }

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> HandedOver | None:
        """None for a row this module did not write (or wrote differently)."""
        try:
            left_at = stored.get("left_at")
            position, eta = stored.get("position"), stored.get("eta_seconds")
            return cls(
                repository=str(stored["repository"]),
                pull_number=int(stored["pull_number"]),
                base_branch=str(stored["base_branch"]),
                sha=str(stored["sha"]),
                node_id=str(stored["node_id"]),
                actor=str(stored["actor"]),
                enqueued_at=datetime.fromisoformat(str(stored["enqueued_at"])),
                state=HandoverState(str(stored.get("state") or "queued")),
                position=position if isinstance(position, int) else None,
                eta_seconds=eta if isinstance(eta, int) else None,
                jump=bool(stored.get("jump")),
                left_reason=str(stored.get("left_reason") or ""),
                left_at=datetime.fromisoformat(left_at) if isinstance(left_at, str) else None,
                pending_out=str(stored.get("pending_out") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _handed_key(repository: str, number: int) -> str:
    return f"{repository.lower()}#{number}"


async def handed_over(storage: Storage, repository: str, number: int) -> HandedOver | None:
    stored = await storage.kv_get(HANDED_NAMESPACE, _handed_key(repository, number))
    return None if stored is None else HandedOver.of(stored)


async def _records(storage: Storage, prefix: str = "") -> list[tuple[str, HandedOver | None]]:
    rows = await storage.kv_list(HANDED_NAMESPACE, prefix=prefix)
    return [(key, HandedOver.of(value)) for key, value in rows]


async def list_handed_over(storage: Storage) -> list[HandedOver]:
    """Every pull request the App handed to GitHub's queue, in queue and left (dashboard)."""
    return [record for _, record in await _records(storage) if record is not None]


async def _keep(storage: Storage, record: HandedOver) -> None:
    await storage.kv_put(
        HANDED_NAMESPACE, _handed_key(record.repository, record.pull_number), record.as_json()
    )


@dataclass(frozen=True)
class Handover:
    """What the App asks of GitHub's queue for one pull request at its judged head."""

    repository: str
    pull_number: int
    base_branch: str
    node_id: str
    sha: str
    actor: str
    jump: bool = False


async def hand_over(
    storage: Storage, client: GitHubAPI, handover: Handover, now: datetime
) -> QueueAnswer:
    """`enqueuePullRequest` at the judged sha; a pull request GitHub took is remembered,
    and a branch GitHub says has no queue is remembered as such."""
    answer = await enqueue_pull_request(client, handover.node_id, handover.sha, jump=handover.jump)
    if answer.outcome is QueueOutcome.QUEUED:
        await _keep(
            storage,
            HandedOver(
                repository=handover.repository.lower(),
                pull_number=handover.pull_number,
                base_branch=handover.base_branch,
                sha=handover.sha,
                node_id=handover.node_id,
                actor=handover.actor,
                enqueued_at=now,
                position=answer.position,
                eta_seconds=answer.eta_seconds,
                jump=handover.jump,
            ),
        )
    elif answer.outcome is QueueOutcome.NO_MERGE_QUEUE:
        await forget_rules(storage, handover.repository, handover.base_branch, now)
    return answer


def leaves(record: HandedOver | None, sha: str | None) -> bool:
    """Whether a queued record must leave: `sha` None takes it out whatever its head
    (closed, draft, held...); a sha takes it out unless it is the one GitHub has."""
    if record is None or record.state is not HandoverState.QUEUED:
        return False
    return sha is None or sha != record.sha


async def take_out(
    storage: Storage,
    client: GitHubAPI,
    record: HandedOver,
    reason: str,
    now: datetime,
) -> QueueAnswer:
    """`dequeuePullRequest`; the record keeps why it left. One GitHub already took out
    (a push, a failed group) is taken out all the same. One GitHub keeps (locked in a
    group being tested) stays queued with `pending_out`, for `pending_take_outs`."""
    answer = await dequeue_pull_request(client, record.node_id)
    if answer.ok:
        await mark_left(storage, replace(record, pending_out=""), reason, now)
    else:
        await _keep(storage, replace(record, pending_out=reason))
        log.warning(
            "GitHub's merge queue kept %s#%s (%s): %s",
            record.repository,
            record.pull_number,
            answer.outcome.value,
            answer.message,
        )
    return answer


async def pending_take_outs(storage: Storage, repository: str) -> list[HandedOver]:
    """The repository's queued records whose take-out GitHub refused (`take_out`)."""
    records = await _records(storage, f"{repository.lower()}#")
    return [
        r for _, r in records if r is not None and r.state is HandoverState.QUEUED and r.pending_out
    ]


def _group_key(repository: str, head_sha: str) -> str:
    return f"{repository.lower()}@{head_sha}"


@dataclass(frozen=True)
class MergeGroup:
    """A merge group the App checked (kv `github-merge-groups`): the pull requests
    (number, head) it merges, and when it was seen."""

    head_sha: str
    members: tuple[tuple[int, str], ...]
    at: datetime | None
    """None for a row written before groups had a time (or an unreadable one): old."""

    def as_json(self) -> dict[str, Any]:
        return {
            "head_sha": self.head_sha,
            "members": [[number, head] for number, head in self.members],
            "at": None if self.at is None else self.at.isoformat(),
        }

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> MergeGroup | None:
        """None for a row without its head; members of another shape are left out."""
        head_sha, members, at = stored.get("head_sha"), stored.get("members"), stored.get("at")
        if not isinstance(head_sha, str):
            return None
        try:
            seen = datetime.fromisoformat(at) if isinstance(at, str) else None
        except ValueError:
            seen = None
        return cls(head_sha=head_sha, members=_member_pairs(members), at=seen)


def _member_pairs(members: object) -> tuple[tuple[int, str], ...]:
    pairs: list[tuple[int, str]] = []
    for member in members if isinstance(members, list) else []:
        if isinstance(member, list) and len(member) == 2:
            number, head = member
            if isinstance(number, int) and isinstance(head, str):
                pairs.append((number, head))
    return tuple(pairs)


async def remember_group(
    storage: Storage,
    repository: str,
    head_sha: str,
    members: Iterable[tuple[int, str]],
    now: datetime,
) -> None:
    """The pull requests (number, head) the merge group at `head_sha` merges."""
    group = MergeGroup(head_sha=head_sha, members=tuple(members), at=now)
    await storage.kv_put(GROUPS_NAMESPACE, _group_key(repository, head_sha), group.as_json())


async def forget_group(storage: Storage, repository: str, head_sha: str) -> None:
    await storage.kv_delete(GROUPS_NAMESPACE, _group_key(repository, head_sha))


async def _groups(storage: Storage, repository: str) -> list[tuple[str, MergeGroup | None]]:
    rows = await storage.kv_list(GROUPS_NAMESPACE, prefix=f"{repository.lower()}@")
    return [(key, MergeGroup.of(value)) for key, value in rows]


async def groups_holding(storage: Storage, repository: str, number: int, head: str) -> list[str]:
    """The head shas of the live merge groups that merge pull request `number` at `head`."""
    return [
        group.head_sha
        for _, group in await _groups(storage, repository)
        if group is not None and (number, head) in group.members
    ]


async def mark_merged(storage: Storage, record: HandedOver, now: datetime) -> None:
    await _keep(
        storage,
        replace(
            record,
            state=HandoverState.MERGED,
            left_reason="merged by GitHub's merge queue",
            left_at=now,
        ),
    )


async def mark_left(storage: Storage, record: HandedOver, reason: str, now: datetime) -> None:
    """It left GitHub's queue (taken out by the App, or by GitHub on its own: `pull_request`
    dequeued): record why."""
    await _keep(storage, replace(record, state=HandoverState.LEFT, left_reason=reason, left_at=now))


async def hand_over_refused_merge(
    calls: MergeCalls, storage: Storage, entry: MergeEntry, answer: Answer, now: datetime
) -> Drop | None:
    """The App's queue asked GitHub to merge and GitHub said the branch merges only
    through its merge queue (the rule came after the App read the branch's rules): read
    them again and, when GitHub's queue takes the pull request at the judged sha, the
    entry leaves the App's queue for it. None: the answer is the queue's to decide."""
    if not requires_queue(answer) or entry.judged_sha is None:
        return None
    if not await uses_github_queue(storage, calls, entry.base_branch, now, refresh=True):
        return None
    pull = await calls.pull(entry.pull_number)
    handover = Handover(
        repository=entry.repository,
        pull_number=entry.pull_number,
        base_branch=entry.base_branch,
        node_id=str(pull.get("node_id") or ""),
        sha=entry.judged_sha,
        actor="merge queue",
    )
    queued = await hand_over(storage, calls.client, handover, now)
    if queued.outcome is not QueueOutcome.QUEUED:
        log.warning(
            "%s#%s: GitHub's merge queue refused it (%s): %s",
            entry.repository,
            entry.pull_number,
            queued.outcome.value,
            queued.message,
        )
        return None
    return Drop(
        f"handed to GitHub's merge queue for `{entry.base_branch}` at {entry.judged_sha[:7]} "
        "(the branch merges only through it)"
    )


async def prune(storage: Storage, repository: str, now: datetime) -> int:
    """Forget the repository's records that left GitHub's queue more than LEFT_KEPT ago
    and group rows older than GROUP_KEPT; how many rows went. A row without a readable
    time is old: nothing else would ever remove it."""
    gone = 0
    for key, record in await _records(storage, f"{repository.lower()}#"):
        if record is None or record.state is HandoverState.QUEUED:
            continue
        if record.left_at is None or record.left_at < now - LEFT_KEPT:
            await storage.kv_delete(HANDED_NAMESPACE, key)
            gone += 1
    for key, group in await _groups(storage, repository):
        if group is None or group.at is None or group.at < now - GROUP_KEPT:
            await storage.kv_delete(GROUPS_NAMESPACE, key)
            gone += 1
    return gone
