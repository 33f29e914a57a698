"""The merge-queue panel: entries grouped per queue, head first, each entry's state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.dashboard.queues import queue_panels, state_of
from bot.storage.base import MergeEntry, MergeOptions, MergeStatus

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def entry(
    number: int, repository: str = "octo/docs", base: str = "main", **changes: Any
) -> MergeEntry:
    fields: dict[str, Any] = {
        "id": number,
        "repository": repository,
        "base_branch": base,
        "pull_number": number,
        "installation_id": 7,
        "judged_sha": "a" * 40,
        "judgment_version": 1,
        "status": MergeStatus.PENDING,
        "method": "squash",
        "options": MergeOptions(),
        "attempts": 0,
        "prechecks": 0,
        "nudged": False,
        "updating_from": None,
        "enqueued_at": NOW - timedelta(hours=1),
        "next_attempt_at": NOW - timedelta(minutes=1),
        "lease_owner": None,
        "lease_expires_at": None,
        "updated_at": NOW - timedelta(minutes=5),
        "reason": "approved",
    }
    fields.update(changes)
    return MergeEntry(**fields)


@pytest.mark.parametrize(
    ("changes", "position", "state"),
    [
        ({"status": MergeStatus.PROCESSING, "lease_owner": "w"}, 1, "merging"),
        ({"judged_sha": None, "updating_from": "b" * 40}, 1, "waiting for a judgment"),
        ({"next_attempt_at": NOW + timedelta(minutes=3)}, 1, "waiting until 2026-03-01 12:03"),
        ({}, 1, "next"),
        ({}, 2, "queued"),
    ],
)
def test_states(changes: dict[str, Any], position: int, state: str) -> None:
    assert state_of(entry(1, **changes), position, NOW) == state


def test_panels_per_queue_head_first() -> None:
    entries = [
        entry(3, "octo/api", attempts=2, reason="checks pending"),
        entry(1, "octo/docs"),
        entry(4, "octo/docs"),
        entry(2, "octo/docs", "release"),
    ]
    panels = queue_panels(entries, "https://github.com", NOW)
    assert [(p.repository, p.base_branch, [r.pull_number for r in p.rows]) for p in panels] == [
        ("octo/api", "main", [3]),
        ("octo/docs", "main", [1, 4]),
        ("octo/docs", "release", [2]),
    ]
    head = panels[0].rows[0]
    assert (head.position, head.state, head.attempts) == (1, "next", 2)
    assert head.link == "https://github.com/octo/api/pull/3"
    assert head.last_event == "checks pending (2026-03-01 11:55)"
    assert head.since == "2026-03-01 11:00"
    assert [r.position for r in panels[1].rows] == [1, 2]
    assert queue_panels([], "https://github.com", NOW) == []
