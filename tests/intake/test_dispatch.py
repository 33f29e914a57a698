"""The dispatcher (`bot/intake/dispatch.py`): which deliveries need a worker at all, and one
handler's failure neither stops the others nor makes them act twice on a retry, and every
failure is reported."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.client import RateLimited
from bot.intake.dispatch import Context, Dispatcher, HandlerFailures, has_handlers
from bot.routing import build_router
from bot.storage.base import DeliveryStatus, Storage
from tests.support.delivery_helpers import ManualClock, make_worker, new_delivery


async def test_retry_runs_only_the_handlers_that_failed(storage: Storage) -> None:
    """One feature's failure neither stops the others nor makes them act twice."""
    clock = ManualClock()
    counts = {"good": 0, "flaky": 0}
    router = Router()

    @router.register("push")
    async def good(event: Event, context: Context) -> None:
        counts["good"] += 1

    @router.register("push")
    async def flaky(event: Event, context: Context) -> None:
        counts["flaky"] += 1
        if counts["flaky"] == 1:
            raise RuntimeError("transient")

    await storage.record_delivery(new_delivery("d-2"))
    worker = make_worker(storage, router, clock)
    await worker.run_once()
    assert counts == {"good": 1, "flaky": 1}
    clock.advance(10)
    await worker.run_once()
    assert counts == {"good": 1, "flaky": 2}
    done = await storage.get_delivery("d-2")
    assert done is not None and done.status is DeliveryStatus.DONE


async def test_dispatcher_reports_every_failure(storage: Storage) -> None:
    router = Router()

    @router.register("push")
    async def first(event: Event, context: Context) -> None:
        raise ValueError("one")

    @router.register("push")
    async def second(event: Event, context: Context) -> None:
        raise KeyError("two")

    await storage.record_delivery(new_delivery("d-3"))
    delivery = await storage.get_delivery("d-3")
    assert delivery is not None
    with pytest.raises(HandlerFailures) as raised:
        await Dispatcher(router, storage)(delivery)
    assert len(raised.value.failures) == 2


async def test_rate_limited_handlers_are_reported_quietly(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler waiting for GitHub's reset is still a failure of this run (the worker defers
    the delivery), but logged without a traceback: while an installation is paused, every
    delivery of it ends this way."""
    reset = datetime(2026, 11, 22, 13, 0, tzinfo=UTC)
    router = Router()

    @router.register("push")
    async def paused(event: Event, context: Context) -> None:
        raise RateLimited(1, reset)

    await storage.record_delivery(new_delivery("d-rl"))
    delivery = await storage.get_delivery("d-rl")
    assert delivery is not None
    caplog.set_level(logging.INFO, logger="bot.intake.dispatch")
    with pytest.raises(HandlerFailures) as raised:
        await Dispatcher(router, storage)(delivery)
    [failure] = raised.value.failures.values()
    assert isinstance(failure, RateLimited) and failure.reset_at == reset
    [record] = [r for r in caplog.records if r.name == "bot.intake.dispatch"]
    assert record.levelno == logging.INFO
    assert record.exc_info is None
    assert "installation 1" in record.getMessage()


# -- which deliveries need a worker (pure) ---------------------------------------------------


def _test_router() -> Router:
    router = Router()

    async def handler(event: Event, context: Context) -> None:
        pass

    router.add(handler, "push")
    router.add(handler, "pull_request", action="opened")
    router.add(handler, "check_run", check_run="dict")
    return router


@pytest.mark.parametrize(
    ("event", "payload", "expected"),
    [
        ("push", {}, True),  # every push, whatever the payload
        ("push", {"action": "anything"}, True),
        ("pull_request", {"action": "opened"}, True),
        ("pull_request", {"action": "closed"}, False),
        ("pull_request", {}, False),
        ("pull_request_review", {"action": "submitted"}, False),
        ("check_run", {"check_run": "dict"}, True),  # routes on any top-level key, not just action
        ("check_run", {"check_run": "other"}, False),
        ("check_run", {"check_run": {"id": 1}}, True),  # unhashable: left to the dispatcher
        ("ping", {}, False),
    ],
)
def test_has_handlers(event: str, payload: dict[str, Any], expected: bool) -> None:
    assert has_handlers(_test_router(), event, payload) is expected


@pytest.mark.parametrize(
    ("event", "action", "expected"),
    [
        ("push", None, True),
        ("pull_request", "opened", True),
        ("pull_request", "labeled", True),
        ("pull_request", "closed", True),  # leaves the merge queue
        ("pull_request_review", "submitted", True),  # may complete a human approval
        ("pull_request_review", "edited", False),
        ("issue_comment", "created", True),
        ("issue_comment", "edited", False),
        ("check_run", "requested_action", True),
        ("check_run", "completed", True),  # another required check may unblock a merge
        ("check_run", "created", False),
        ("installation", "created", True),
        ("installation_repositories", "added", True),
        ("star", "created", False),
    ],
)
def test_the_apps_router_subscribes_to(event: str, action: str | None, expected: bool) -> None:
    assert has_handlers(build_router(), event, {"action": action}) is expected
