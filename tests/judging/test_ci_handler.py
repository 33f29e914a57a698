"""The CI webhooks' handler on its own: it reads storage only, and only a sha that waits
for CI goes further (the end-to-end paths are in test_review_context_flow.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.judging import handlers
from bot.judging.state import ShaState, save_state, state_key
from bot.services import ServiceHub
from bot.storage.base import Delivery, DeliveryStatus, Storage

NOW = datetime(2025, 5, 1, tzinfo=UTC)
SHA = "a" * 40


def context(storage: Storage, installation_id: int | None = 1) -> Context:
    delivery = Delivery(
        delivery_id="d1",
        event="check_run",
        action="completed",
        installation_id=installation_id,
        repository="octo/hello",
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
    # No services: any use of GitHub or the judges would raise ServicesNotReady.
    return Context(delivery, storage, ServiceHub(), lambda: NOW)


def finished(**more: Any) -> dict[str, Any]:
    return {
        "repository": {"full_name": "octo/hello"},
        "check_run": {"head_sha": SHA, "name": "tests", "conclusion": "success"},
        **more,
    }


@pytest.mark.parametrize(
    ("data", "installation_id"),
    [
        (finished(), None),
        ({"repository": {"full_name": "octo/hello"}}, 1),
        (finished(repository=None), 1),
        (finished(), 1),
    ],
    ids=["no-installation", "no-check-run", "no-repository", "sha-never-judged"],
)
async def test_nothing_is_fetched_for_a_sha_that_does_not_wait(
    sqlite_storage: Storage, data: dict[str, Any], installation_id: int | None
) -> None:
    event = Event(data, event="check_run", delivery_id="d1")
    await handlers.on_ci_finished(event, context(sqlite_storage, installation_id))


async def test_a_judged_sha_is_left_alone(sqlite_storage: Storage) -> None:
    await save_state(
        sqlite_storage, state_key("octo/hello", SHA), ShaState(owner="d0", verdict="accept")
    )
    event = Event(finished(), event="check_run", delivery_id="d1")
    await handlers.on_ci_finished(event, context(sqlite_storage))
