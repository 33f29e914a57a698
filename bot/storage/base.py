"""The one storage interface every feature talks to.

Two real backends implement it: SQLite (embedded default) and PostgreSQL (several
replicas behind a load balancer). Features receive a `Storage` and never know which.

Records are plain frozen dataclasses so decisions can be pure functions over them.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


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

    async def defer_delivery(self, delivery_id: str, worker_id: str, until: datetime) -> bool:
        """Back to pending, due at `until`, giving back the attempt its claim counted: the
        delivery waits on something outside it (GitHub's rate limit), it did not fail.
        False if the lease is no longer this worker's (nothing changes)."""

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

    async def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    async def count_deliveries(self) -> dict[DeliveryStatus, int]:
        """How many deliveries are in each status (all statuses present, zero if none)."""

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        """Newest first."""

    async def prune_deliveries(self, finished_before: datetime) -> int:
        """Delete done and failed deliveries finished before the cut-off; returns how many.
        Pending and processing ones are never pruned."""

    # -- installations -------------------------------------------------------
    async def upsert_installation(self, installation: Installation) -> None: ...

    async def delete_installation(self, installation_id: int) -> None:
        """Removes the installation and its repositories."""

    async def get_installation(self, installation_id: int) -> Installation | None: ...

    async def list_installations(self) -> list[Installation]: ...

    async def update_installation_repositories(
        self, installation_id: int, added: Sequence[str], removed: Sequence[str]
    ) -> None:
        """Repositories are full names (`owner/name`); adding a known one is a no-op."""

    async def list_installation_repositories(self, installation_id: int) -> list[str]:
        """Sorted full names."""

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

    # -- small keyed state (caches, check-run ids, issue numbers, overrides) ---
    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None: ...

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace."""

    async def kv_put_if_absent(self, namespace: str, key: str, value: dict[str, Any]) -> bool:
        """Insert only if the key is new; True if this call inserted it."""

    async def kv_delete(self, namespace: str, key: str) -> None: ...

    # -- usage counters (throttles and budgets) ------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None: ...

    async def usage_since(self, scope: str, since: datetime) -> int:
        """Sum of amounts recorded for `scope` at or after `since`."""
