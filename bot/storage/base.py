"""The one storage interface every feature talks to.

Two real backends implement it: SQLite (embedded default) and PostgreSQL (several
replicas behind a load balancer). Features receive a `Storage` and never know which.

Records are plain frozen dataclasses so decisions can be pure functions over them.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple, Protocol

# GitHub caps webhook payloads at 25 MB and does not deliver larger ones: intake refuses a
# larger body, and a stored body that claims to be larger is a damaged one.
MAX_BODY_BYTES: Final = 25 * 1024 * 1024


class DeliveryStatus(enum.StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """A webhook delivery as it arrived, before any processing.

    `done` is for a delivery that no handler subscribes to: it is stored already done
    (finished when received, no attempt counted), so no worker ever claims it."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repository: str | None
    body: bytes
    received_at: datetime
    done: bool = False


@dataclass(frozen=True, slots=True)
class Delivery:
    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repository: str | None
    body: bytes
    status: DeliveryStatus
    attempts: int
    received_at: datetime
    next_attempt_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: str | None
    finished_at: datetime | None

    @classmethod
    def in_hand(
        cls,
        delivery_id: str,
        event: str,
        *,
        action: str | None,
        installation_id: int,
        repository: str,
        body: bytes,
        now: datetime,
    ) -> Delivery:
        """A delivery being worked on that no intake queue holds (a workflow run, the
        merge queue's own judgment): first attempt, no lease."""
        return cls(
            delivery_id=delivery_id,
            event=event,
            action=action,
            installation_id=installation_id,
            repository=repository,
            body=body,
            status=DeliveryStatus.PROCESSING,
            attempts=1,
            received_at=now,
            next_attempt_at=now,
            lease_owner=None,
            lease_expires_at=None,
            last_error=None,
            finished_at=None,
        )


@dataclass(frozen=True, slots=True)
class Installation:
    installation_id: int
    account: str
    account_type: str
    repository_selection: str
    suspended: bool
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class StoredVerdict:
    """One appended verdict record (the JSON is the record's own serialisation)."""

    seq: int
    task_id: str
    repository: str | None
    head_sha: str | None
    verdict: str
    created_at: datetime
    record: dict[str, Any]


class VerdictFacts(NamedTuple):
    """What the reports read of one verdict record (`bot.storage.verdict_facts`): a tuple,
    not a dataclass, because a window lists a hundred thousand of them."""

    seq: int
    task_id: str
    repository: str | None
    head_sha: str | None
    created_at: datetime
    decision: str | None
    label: str | None
    mode: str | None
    decided_by: str | None
    overridden: bool
    rounds: str
    calls: str
    tags: tuple[str, ...]
    readable: bool


class MergeStatus(enum.StrEnum):
    """A merge-queue entry's state (`bot.merging.transitions` says which moves are allowed)."""

    PENDING = "pending"
    PROCESSING = "processing"
    MERGED = "merged"
    DROPPED = "dropped"
    ESCALATED = "escalated"


class MergePriority(enum.StrEnum):
    """Where an entry goes in its queue (`/judge merge --priority`, from someone entitled
    to override): urgent first, then high, then normal, each in the order they came."""

    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"

    @property
    def rank(self) -> int:
        """The stored, ordered value: higher goes first."""
        return _PRIORITY_ORDER.index(self)

    @classmethod
    def of_rank(cls, rank: int) -> MergePriority:
        return _PRIORITY_ORDER[min(max(rank, 0), len(_PRIORITY_ORDER) - 1)]


_PRIORITY_ORDER: Final = (MergePriority.NORMAL, MergePriority.HIGH, MergePriority.URGENT)


@dataclass(frozen=True, slots=True)
class MergeOptions:
    """What a queue entry's step needs of `.github/judge.yml`, as it was when the pull
    request entered (the method is resolved and kept on its own). Stored as one JSON
    object, `as_json`.

    Rows outlive the code that wrote them, so reading is lenient: a key missing or of
    another type (older rows, rows written by hand) reads as unset, and a key this version
    does not know (written by a newer one, during a rolling upgrade) is ignored rather than
    refused. Nothing is lost by that: options are never written back from a read entry,
    only anew from the repository's configuration when the pull request is approved."""

    label: str | None = None
    hold_label: str | None = None
    delete_branch: bool = False
    batch_size: int = 1
    parallel_checks: int = 1
    """`merge.batch_size` and `merge.parallel_checks`; the queue's head's decide."""

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "hold_label": self.hold_label,
            "delete_branch": self.delete_branch,
            "batch_size": self.batch_size,
            "parallel_checks": self.parallel_checks,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> MergeOptions:
        label, hold = stored.get("label"), stored.get("hold_label")
        return cls(
            label=label if isinstance(label, str) else None,
            hold_label=hold if isinstance(hold, str) else None,
            delete_branch=bool(stored.get("delete_branch")),
            batch_size=_stored_count(stored.get("batch_size")),
            parallel_checks=_stored_count(stored.get("parallel_checks")),
        )


def _stored_count(value: Any) -> int:
    """A stored count; anything but a positive whole number (older rows) reads as 1."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


@dataclass(frozen=True, slots=True)
class NewMergeEntry:
    """An approved pull request entering the queue of its base branch, with what the step
    needs from `.github/judge.yml` when it entered (`method` already resolved)."""

    repository: str
    base_branch: str
    pull_number: int
    installation_id: int
    judged_sha: str
    method: str
    options: MergeOptions


@dataclass(frozen=True, slots=True)
class MergeEntry:
    """One pull request's place in a merge queue. `judged_sha` is None while the head the
    queue moved (update-branch) waits to be judged; `judgment_version` counts approvals of
    this entry, so a claim is tied to one judgment."""

    id: int
    repository: str
    base_branch: str
    pull_number: int
    installation_id: int
    judged_sha: str | None
    judgment_version: int
    status: MergeStatus
    method: str
    options: MergeOptions
    attempts: int
    prechecks: int
    nudged: bool
    updating_from: str | None
    enqueued_at: datetime
    next_attempt_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    updated_at: datetime
    reason: str
    priority: MergePriority = MergePriority.NORMAL
    priority_by: str | None = None
    """Who set the priority (a login), and when; None while nobody has."""
    priority_at: datetime | None = None
    batch: int | None = None
    """The batch (`MergeBatch.id`) the entry is being tested in; None while in none."""


class BatchState(enum.StrEnum):
    """A batch of the App's queue: `building` its queue branch, `testing` (CI and the
    judges on its tip), then `landed`, `failed` (split or culprit evicted) or `discarded`
    (the base moved, a member left, restarted for an urgent one)."""

    BUILDING = "building"
    TESTING = "testing"
    LANDED = "landed"
    FAILED = "failed"
    DISCARDED = "discarded"


class CheckResult(enum.StrEnum):
    PENDING = "pending"
    PASSED = "passed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class QueueLease:
    """Who acts for a queue: the worker holding the lease on its head entry. Batch writes
    made under a lease that ran out or passed to another worker change nothing."""

    head_id: int
    worker_id: str


@dataclass(frozen=True, slots=True)
class NewMergeBatch:
    """A batch about to be built: `members` (pull number, judged sha) merged in this order
    on `built_on`; `review_files` what the judges must re-read at its tip."""

    repository: str
    base_branch: str
    members: tuple[tuple[int, str], ...]
    built_on: str
    review_files: tuple[str, ...] = ()
    split_from: int | None = None


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """Which check failed on a batch's tip, where to read about it, the files it names."""

    check: str
    detail: str = ""
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MergeBatch:
    id: int
    repository: str
    base_branch: str
    members: tuple[tuple[int, str], ...]
    built_on: str
    tip: str
    review_files: tuple[str, ...]
    split_from: int | None
    state: BatchState
    ci: CheckResult
    review: CheckResult
    failure: BatchFailure | None
    reason: str
    created_at: datetime
    updated_at: datetime

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(number for number, _ in self.members)


@dataclass(frozen=True, slots=True)
class BatchUpdate:
    """What a step learned of a batch; None leaves a field as it is. A final `state`
    (landed, failed, discarded) takes the batch off its members' entries."""

    state: BatchState | None = None
    tip: str | None = None
    ci: CheckResult | None = None
    review: CheckResult | None = None
    failure: BatchFailure | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class MergeSettle:
    """How a worker leaves the entry it claimed: its next status and counters. `judged_sha`
    None with `updating_from` set means the queue moved the head and waits for a judgment."""

    status: MergeStatus
    reason: str
    actor: str
    next_attempt_at: datetime | None = None
    attempts: int | None = None
    prechecks: int | None = None
    updating_from: str | None = None
    clear_judgment: bool = False


@dataclass(frozen=True, slots=True)
class MergeEvent:
    """One recorded transition: who moved which entry from what to what, when and why."""

    seq: int
    entry_id: int
    repository: str
    pull_number: int
    judged_sha: str | None
    from_status: MergeStatus | None
    to_status: MergeStatus
    actor: str
    reason: str
    at: datetime


class StorageUnavailable(RuntimeError):
    """The database could not be opened (unreachable, refused, bad credentials). The
    message names the database without its password and says why."""


def describe_database(url: str) -> str:
    """`url` fit for a log line or an error: the password is never shown."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    credentials, _, location = rest.partition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{location}" if user else f"{scheme}://{location}"


class Storage(Protocol):
    """Async storage. Every method is safe to call concurrently from many tasks,
    and (PostgreSQL) from many processes."""

    # -- lifecycle ---------------------------------------------------------
    async def open(self) -> None:
        """Connect and create or migrate the schema. Idempotent."""

    async def close(self) -> None: ...

    async def ping(self) -> bool:
        """True when the store answers a trivial query."""

    # -- webhook deliveries --------------------------------------------------
    async def record_delivery(self, delivery: NewDelivery) -> bool:
        """Store a delivery as pending (as done, finished at its arrival, if `delivery.done`).
        False (and nothing changes) if its id was seen.

        A delivery the store cannot hold (an id outside 64 bits, a naive datetime) raises
        ValueError for its own caller only: requests stored alongside it are unaffected."""

    async def claim_deliveries(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[Delivery]:
        """Atomically lease up to `limit` deliveries that are due: pending with
        next_attempt_at <= now, or processing whose lease expired (a crashed worker).
        Claiming increments `attempts`. Oldest first. Never hands one delivery to two
        live workers."""

    async def complete_delivery(self, delivery_id: str, worker_id: str, now: datetime) -> bool:
        """Mark done. False if the lease is no longer this worker's (nothing changes)."""

    async def release_delivery(
        self,
        delivery_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        """After a failed attempt: back to pending at `retry_at`, or parked as failed
        when `retry_at` is None. False if the lease is no longer this worker's."""

    async def defer_delivery(
        self, delivery_id: str, worker_id: str, until: datetime, error: str | None = None
    ) -> bool:
        """Back to pending, due at `until`, giving back the attempt its claim counted: the
        delivery waits on something outside it (GitHub's rate limit, an outage), it did not
        fail. `error`, when given, replaces `last_error` (what it waits for). False if the
        lease is no longer this worker's (nothing changes)."""

    async def renew_lease(self, delivery_id: str, worker_id: str, until: datetime) -> bool:
        """A heartbeat: this worker's lease now runs until `until`. False if the lease is no
        longer this worker's (taken over after it expired, or the delivery is finished),
        so the worker knows to stop."""

    async def requeue_failed(self, delivery_id: str, now: datetime) -> bool:
        """A person asked for a failed delivery again (GitHub's "Redeliver", the CLI): back
        to pending, due at `now`, attempts reset to 0, `last_error` kept until the next
        attempt replaces it. One conditional statement: only a `failed` row changes, so a
        pending, processing or done delivery is never touched and two callers re-queue it
        once. False (nothing changes) for any other status or an unknown id."""

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        """The delivery as stored. Its body is empty (b"", which no handler reads as a
        payload) when the stored body cannot be read: such a delivery is failed, with the
        reason, by the claim that reaches it, and must stay listable and retryable."""

    async def count_deliveries(self) -> dict[DeliveryStatus, int]:
        """How many deliveries are in each status (all statuses present, zero if none)."""

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        """Newest first; a body that cannot be read is empty, as in `get_delivery`."""

    async def prune_deliveries(self, finished_before: datetime) -> int:
        """Delete done and failed deliveries finished before the cut-off; returns how many.
        Pending and processing ones are never pruned."""

    # -- installations -------------------------------------------------------
    async def upsert_installation(self, installation: Installation) -> None: ...

    async def delete_installation(self, installation_id: int) -> None:
        """Removes the installation, and the repository names earlier versions kept for it."""

    async def get_installation(self, installation_id: int) -> Installation | None: ...

    # -- verdict records (append-only audit log) ------------------------------
    async def append_verdict(
        self,
        *,
        task_id: str,
        repository: str | None,
        head_sha: str | None,
        verdict: str,
        created_at: datetime,
        record: dict[str, Any],
    ) -> int:
        """Append one record; returns its sequence number (monotonic per store)."""

    async def list_verdicts(
        self,
        *,
        task_id: str | None = None,
        repository: str | None = None,
        head_sha: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredVerdict]:
        """Oldest first, filtered by every argument given."""

    async def list_verdict_facts(
        self, *, since: datetime | None = None, repository: str | None = None
    ) -> list[VerdictFacts]:
        """The facts of every record at or after `since` (of `repository`, its name compared
        without case), oldest first: the reports' lean read, without the records."""

    async def list_verdict_repositories(self, *, since: datetime | None = None) -> list[str]:
        """Every repository with a record at or after `since`, once per name compared without
        case (as its oldest record spells it), in no particular order."""

    async def last_verdict_seq(self) -> int:
        """The highest sequence number with facts (0 for an empty log): where a reader
        starts `list_verdict_facts_after` to see only what is appended from now on."""

    async def list_verdict_facts_after(self, seq: int, *, limit: int) -> list[VerdictFacts]:
        """The facts of the records with a sequence number above `seq`, oldest first, at
        most `limit`: what was appended since a reader last looked (one primary-key range).
        On PostgreSQL sequence numbers are taken before commit, so a record committed late
        can appear here below numbers already returned."""

    async def get_verdicts(self, seqs: Sequence[int]) -> list[StoredVerdict]:
        """The records with these sequence numbers (unknown ones are left out), oldest first."""

    # -- small keyed state (caches, check-run ids, issue numbers, overrides) ---
    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None: ...

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace."""

    async def kv_put_if_absent(self, namespace: str, key: str, value: dict[str, Any]) -> bool:
        """Insert only if the key is new; True if this call inserted it."""

    async def kv_delete(self, namespace: str, key: str) -> None: ...

    async def write_probe(self, now: datetime) -> None:
        """One small write (a row of its own, replaced each time): raises as any write
        would while the store cannot write (a full disk, a lock held elsewhere)."""

    async def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """Every row of `namespace` whose key starts with `prefix`, by key (code point order)."""

    # -- usage counters (throttles and budgets) ------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None: ...

    async def usage_since(self, scope: str, since: datetime) -> int:
        """Sum of amounts recorded for `scope` at or after `since`."""

    # -- merge queues (one per repository and base branch) ---------------------
    async def enqueue_merge(
        self, entry: NewMergeEntry, *, actor: str, reason: str, now: datetime
    ) -> MergeEntry:
        """Approve `entry`'s pull request. An active entry of that pull request keeps its
        place and takes the new judgment (sha, version + 1, due now, counters reset, lease
        dropped); otherwise a new pending entry joins the back of its queue. Recorded."""

    async def active_merge(self, repository: str, pull_number: int) -> MergeEntry | None:
        """The pull request's pending or processing entry."""

    async def merge_queue(self, repository: str, base_branch: str) -> list[MergeEntry]:
        """The active entries of one queue, head first."""

    async def list_active_merges(self) -> list[MergeEntry]:
        """The active entries of every queue: by repository and base branch (code point
        order), each queue head first."""

    async def claim_merge_heads(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[MergeEntry]:
        """Atomically lease up to `limit` queue heads that are due: pending with
        next_attempt_at <= now, or processing whose lease expired (reclaimed). Only the
        head of a queue is ever claimed, so one merge is in flight per queue; one
        conditional statement, so two workers (replicas) never both claim one head.
        Each claim is recorded, and forgets the nudges before it (the step reads GitHub
        after them)."""

    async def settle_merge(
        self, entry_id: int, worker_id: str, settle: MergeSettle, now: datetime
    ) -> bool:
        """The worker's outcome for the entry it holds. False (nothing changes) when the
        lease is no longer this worker's: the entry left, was re-approved or reclaimed.
        Back to pending after a nudge that came since the claim, it is due at the earlier
        of `next_attempt_at` and `now`, and marked nudged: the step read GitHub before
        the change."""

    async def leave_merge_queue(
        self,
        repository: str,
        pull_number: int,
        *,
        status: MergeStatus,
        actor: str,
        reason: str,
        now: datetime,
    ) -> MergeEntry | None:
        """The pull request's active entry ends (`status` merged, dropped or escalated);
        the ended entry, or None when it had none. Recorded."""

    async def nudge_merge_queue(
        self, repository: str, now: datetime, *, pull_number: int | None = None
    ) -> int:
        """GitHub said something changed: the repository's pending entries (or one pull
        request's) are due now and marked nudged; a processing one keeps the nudge for its
        step's settle. Returns how many entries it reached, of either status."""

    async def set_merge_priority(
        self,
        repository: str,
        pull_number: int,
        priority: MergePriority,
        *,
        actor: str,
        now: datetime,
    ) -> MergeEntry | None:
        """The pull request's active entry takes `priority`, recorded with who and when
        (and as a transition); None when it has no active entry. A processing head stays
        the head: priority orders the entries waiting behind it."""

    async def next_merge_due(self) -> datetime | None:
        """When the earliest queue head becomes claimable (due, or its lease ends)."""

    # -- batches of the App's queue (written only under the queue head's lease) ------
    async def open_merge_batch(
        self, batch: NewMergeBatch, lease: QueueLease, now: datetime
    ) -> MergeBatch | None:
        """A new batch in state `building`, its members' active entries marked with it;
        None (nothing written) when `lease` no longer holds."""

    async def update_merge_batch(
        self, batch_id: int, update: BatchUpdate, lease: QueueLease, now: datetime
    ) -> bool:
        """Record what a step learned of a batch; False (nothing written) when `lease` no
        longer holds or the batch already ended."""

    async def merge_batches(self, repository: str, base_branch: str) -> list[MergeBatch]:
        """The queue's batches in flight (building or testing), front first."""

    async def list_merge_events(
        self, repository: str, pull_number: int | None = None
    ) -> list[MergeEvent]:
        """Recorded transitions, oldest first."""
