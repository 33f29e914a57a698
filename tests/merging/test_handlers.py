"""The queue's event handlers on their own: leaving, staying and nudges, over real storage."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.merging import handlers
from bot.services import ServiceHub
from bot.storage.base import (
    Delivery,
    DeliveryStatus,
    MergeOptions,
    MergeSettle,
    MergeStatus,
    NewMergeEntry,
    Storage,
)

NOW = datetime(2025, 5, 1, tzinfo=UTC)
REPO = "octo/hello"
OLD, NEW = "a" * 40, "b" * 40


def context(storage: Storage, event: str = "pull_request") -> Context:
    delivery = Delivery(
        delivery_id="d1",
        event=event,
        action=None,
        installation_id=1,
        repository=REPO,
        body=b"{}",
        status=DeliveryStatus.PROCESSING,
        attempts=1,
        received_at=NOW,
        next_attempt_at=NOW,
        lease_owner="w",
        lease_expires_at=NOW,
        last_error=None,
        finished_at=None,
    )
    return Context(delivery, storage, ServiceHub(), lambda: NOW)


def payload(action: str, *, merged: bool = False, head: str = OLD, **more: Any) -> dict[str, Any]:
    return {
        "action": action,
        "repository": {"full_name": "Octo/Hello"},
        "sender": {"login": "octocat"},
        "pull_request": {
            "number": 5,
            "state": "closed" if action == "closed" else "open",
            "merged": merged,
            "head": {"sha": head, "ref": "feature"},
            "base": {"ref": "dev"},
        },
        **more,
    }


async def queued(storage: Storage) -> None:
    entry = NewMergeEntry(REPO, "main", 5, 1, OLD, "merge", MergeOptions())
    await storage.enqueue_merge(entry, actor="judge", reason="accepted", now=NOW)


async def last_reason(storage: Storage) -> tuple[MergeStatus, str]:
    event = (await storage.list_merge_events(REPO, 5))[-1]
    return event.to_status, event.reason


async def test_closed_merged_at_the_judged_sha_is_recorded_merged(sqlite_storage: Storage) -> None:
    ctx = context(sqlite_storage)
    await handlers.on_closed(
        Event(payload("closed", merged=True), event="pull_request", delivery_id="d1"), ctx
    )
    await queued(sqlite_storage)
    await handlers.on_closed(
        Event(payload("closed", merged=True), event="pull_request", delivery_id="d1"), ctx
    )
    assert await last_reason(sqlite_storage) == (MergeStatus.MERGED, "merged at the judged commit")
    await queued(sqlite_storage)
    await handlers.on_closed(Event(payload("closed"), event="pull_request", delivery_id="d1"), ctx)
    assert await last_reason(sqlite_storage) == (MergeStatus.DROPPED, "closed")


async def test_draft_and_base_change_leave_other_edits_nudge(sqlite_storage: Storage) -> None:
    ctx = context(sqlite_storage)
    await queued(sqlite_storage)
    await handlers.on_draft(
        Event(payload("converted_to_draft"), event="pull_request", delivery_id="d1"), ctx
    )
    assert await last_reason(sqlite_storage) == (MergeStatus.DROPPED, "converted to draft")
    await queued(sqlite_storage)
    edited = payload("edited", changes={"title": {"from": "x"}})
    await handlers.on_edited(Event(edited, event="pull_request", delivery_id="d1"), ctx)
    assert (await sqlite_storage.active_merge(REPO, 5)) is not None
    rebased = payload("edited", changes={"base": {"ref": {"from": "main"}}})
    await handlers.on_edited(Event(rebased, event="pull_request", delivery_id="d1"), ctx)
    assert await last_reason(sqlite_storage) == (MergeStatus.DROPPED, "base branch changed to dev")


async def test_synchronize_leaves_unless_the_queue_moved_the_head(sqlite_storage: Storage) -> None:
    ctx = context(sqlite_storage)
    push = payload("synchronize", head=NEW, before=OLD, after=NEW)
    await handlers.on_push_to_pull(
        Event(push, event="pull_request", delivery_id="d1"), ctx
    )  # not queued
    await queued(sqlite_storage)
    [head] = await sqlite_storage.claim_merge_heads("w", 1, 60, NOW)
    updating = MergeSettle(
        MergeStatus.PENDING, "updated", "w", updating_from=OLD, clear_judgment=True
    )
    await sqlite_storage.settle_merge(head.id, "w", updating, NOW)
    await handlers.on_push_to_pull(Event(push, event="pull_request", delivery_id="d1"), ctx)
    assert (await sqlite_storage.active_merge(REPO, 5)) is not None
    other = payload("synchronize", head="c" * 40, before=NEW, after="c" * 40)
    await handlers.on_push_to_pull(Event(other, event="pull_request", delivery_id="d1"), ctx)
    assert await last_reason(sqlite_storage) == (MergeStatus.DROPPED, "new commits pushed")


async def test_github_changes_nudge_the_repository(sqlite_storage: Storage) -> None:
    ctx = context(sqlite_storage, "status")
    await handlers.on_github_change(
        Event({"state": "success"}, event="status", delivery_id="d1"), ctx
    )
    await queued(sqlite_storage)
    [head] = await sqlite_storage.claim_merge_heads("w", 1, 60, NOW)
    later = MergeSettle(
        MergeStatus.PENDING, "checks", "w", next_attempt_at=datetime(2030, 1, 1, tzinfo=UTC)
    )
    await sqlite_storage.settle_merge(head.id, "w", later, NOW)
    await handlers.on_github_change(
        Event(payload("completed"), event="check_suite", delivery_id="d1"), ctx
    )
    entry = await sqlite_storage.active_merge(REPO, 5)
    assert entry is not None and entry.nudged and entry.next_attempt_at == NOW
