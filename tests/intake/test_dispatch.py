"""The dispatcher (`bot/intake/dispatch.py`): which deliveries need a worker at all, and one
handler's failure neither stops the others nor makes them act twice on a retry, and every
failure is reported."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.client import RateLimited
from bot.intake.dispatch import (
    HANDLED_NAMESPACE,
    Context,
    Dispatcher,
    HandlerFailures,
    forget_handled,
    has_handlers,
    mark_handled,
    was_handled,
)
from bot.routing import build_router
from bot.storage.base import DeliveryStatus, Storage
from bot.storage.sqlite import SqliteStorage
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


# -- the memo of handlers already done -------------------------------------------------------


class MemoWrites(SqliteStorage):
    """SQLite storage that notes the dispatcher's memo writes."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.writes: list[tuple[str, str]] = []

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        if namespace == HANDLED_NAMESPACE:
            self.writes.append(("put", key))
        await super().kv_put(namespace, key, value)

    async def kv_delete(self, namespace: str, key: str) -> None:
        if namespace == HANDLED_NAMESPACE:
            self.writes.append(("delete", key))
        await super().kv_delete(namespace, key)


@pytest.fixture
async def memo_store(tmp_path: Path) -> AsyncIterator[MemoWrites]:
    store = MemoWrites(str(tmp_path / "memo.sqlite3"))
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def handlers_named(*names: str, fail: frozenset[str] = frozenset()) -> Router:
    router = Router()
    for name in names:

        async def handler(event: Event, context: Context, name: str = name) -> None:
            if name in fail:
                raise RuntimeError(f"{name} failed")

        handler.__qualname__ = name
        router.add(handler, "push")
    return router


def memo(delivery_id: str, name: str) -> str:
    return f"{delivery_id}:{__name__}.{name}"


async def memos_of(store: Storage, delivery_id: str, *names: str) -> list[str]:
    """Which of these handlers the store remembers as done for the delivery."""
    return [
        name
        for name in names
        if await store.kv_get(HANDLED_NAMESPACE, memo(delivery_id, name)) is not None
    ]


async def test_a_lone_handler_that_succeeds_leaves_no_memo_to_write(memo_store: MemoWrites) -> None:
    """Its success is followed by the delivery's completion, which says the same."""
    await memo_store.record_delivery(new_delivery("m-1"))
    delivery = await memo_store.get_delivery("m-1")
    assert delivery is not None
    await Dispatcher(handlers_named("only"), memo_store)(delivery)
    assert memo_store.writes == []


async def test_every_handler_but_the_last_is_remembered_until_all_are_done(
    memo_store: MemoWrites,
) -> None:
    await memo_store.record_delivery(new_delivery("m-2"))
    delivery = await memo_store.get_delivery("m-2")
    assert delivery is not None
    await Dispatcher(handlers_named("a", "b", "c"), memo_store)(delivery)
    assert memo_store.writes == [
        ("put", memo("m-2", "a")),
        ("put", memo("m-2", "b")),
        ("delete", memo("m-2", "a")),
        ("delete", memo("m-2", "b")),
    ]
    assert await memos_of(memo_store, "m-2", "a", "b", "c") == []


async def test_after_a_failure_the_handlers_that_succeed_are_remembered_for_the_retry(
    memo_store: MemoWrites,
) -> None:
    """The last handler too: the delivery is not completed, and a retry must skip it."""
    await memo_store.record_delivery(new_delivery("m-3"))
    await memo_store.record_delivery(new_delivery("m-3:other"))
    await memo_store.kv_put(HANDLED_NAMESPACE, memo("m-3:other", "a"), {"at": "then"})
    delivery = await memo_store.get_delivery("m-3")
    assert delivery is not None
    with pytest.raises(HandlerFailures):
        await Dispatcher(handlers_named("a", "b", "c", fail=frozenset("b")), memo_store)(delivery)
    assert await memos_of(memo_store, "m-3", "a", "b", "c") == ["a", "c"]
    memo_store.writes.clear()
    await Dispatcher(handlers_named("a", "b", "c"), memo_store)(delivery)
    # Only b ran; the memos of this delivery are gone, another delivery's are left alone.
    assert memo_store.writes == [("delete", memo("m-3", "a")), ("delete", memo("m-3", "c"))]
    assert await memos_of(memo_store, "m-3", "a", "b", "c") == []
    assert await memos_of(memo_store, "m-3:other", "a") == ["a"]


async def test_memos_keep_the_rows_shape(storage: Storage) -> None:
    """A memo says when its handler was done, as installations hold them; one written by an
    earlier version counts as done."""
    at = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    await mark_handled(storage, "d:h", at)
    assert await storage.kv_get(HANDLED_NAMESPACE, "d:h") == {"at": "2026-01-05T12:00:00+00:00"}
    await storage.kv_put(HANDLED_NAMESPACE, "d:old", {"at": "then"})
    assert await was_handled(storage, "d:h") and await was_handled(storage, "d:old")
    await forget_handled(storage, "d:h")
    assert not await was_handled(storage, "d:h")
