"""Turns a stored delivery into handler calls, isolating each handler's failure.

gidgethub's `Router.dispatch` runs callbacks in no fixed order and stops at the first
exception, so one broken feature would starve the others and a retry would repeat the
ones that had already acted. Here every handler runs; each success is remembered per
delivery (storage kv), and only the handlers that failed run again on a retry, or when a
delivery put off for GitHub (its rate limit, an outage) runs again.

A handler's failure is logged here with its traceback: at WARNING for an unexpected
exception (the App's own bug), at DEBUG for GitHub's failures (`is_github_failure`), whose
one line the worker writes, naming host, request and cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gidgethub import GitHubException
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.client import GitHubClientError, RateLimited, describe_failure
from bot.intake.json_body import decode_stored
from bot.services import ServiceHub, Services
from bot.storage.base import Delivery, Storage

log = logging.getLogger(__name__)

HANDLED_NAMESPACE = "delivery-handled"


@dataclass
class Context:
    """What a handler receives besides the event. Handlers never build clients."""

    delivery: Delivery
    storage: Storage
    hub: ServiceHub = field(default_factory=ServiceHub)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @property
    def services(self) -> Services:
        return self.hub.services

    @property
    def installation_id(self) -> int | None:
        return self.delivery.installation_id

    def log_extra(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery.delivery_id,
            "event": self.delivery.event,
            "action": self.delivery.action,
            "installation": self.delivery.installation_id,
            "repository": self.delivery.repository,
        }


class HandlerFailures(Exception):
    """One or more handlers failed for a delivery; the others completed."""

    def __init__(self, failures: dict[str, BaseException]) -> None:
        self.failures = failures
        summary = "; ".join(f"{name}: {describe_failure(exc)}" for name, exc in failures.items())
        super().__init__(summary)


def is_github_failure(exc: BaseException) -> bool:
    """Whether `exc` is GitHub's answer (or its silence) rather than the App's own bug: its
    message says what went wrong, a traceback adds nothing but lines."""
    return isinstance(exc, GitHubClientError | GitHubException)


def handler_name(callback: Callable[..., Any]) -> str:
    return f"{callback.__module__}.{callback.__qualname__}"


def has_handlers(router: Router, event: str, payload: Mapping[str, Any]) -> bool:
    """Whether `router` has any callback for this delivery: the lookup dispatch makes, so
    intake can store a delivery nothing subscribes to as done instead of queueing it."""
    try:
        return bool(router.fetch(Event(payload, event=event, delivery_id="")))
    except TypeError:
        # A routed key holding a list or object (unhashable): not for intake to answer 500
        # over. Queued, the dispatcher meets the same error and reports it, as it always did.
        return True


def event_from_delivery(delivery: Delivery) -> Event:
    """The delivery as gidgethub's `Event`, decoded from the stored body."""
    data = decode_stored(delivery.body)
    return Event(data, event=delivery.event, delivery_id=delivery.delivery_id)


async def was_handled(storage: Storage, memo_key: str) -> bool:
    return await storage.kv_get(HANDLED_NAMESPACE, memo_key) is not None


async def mark_handled(storage: Storage, memo_key: str, at: datetime) -> None:
    """The handler `memo_key` names is done for its delivery; the row keeps when, which
    nothing reads back."""
    await storage.kv_put(HANDLED_NAMESPACE, memo_key, {"at": at.isoformat()})


async def forget_handled(storage: Storage, memo_key: str) -> None:
    await storage.kv_delete(HANDLED_NAMESPACE, memo_key)


class Dispatcher:
    def __init__(
        self,
        router: Router,
        storage: Storage,
        hub: ServiceHub | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.router = router
        self.storage = storage
        self.hub = hub if hub is not None else ServiceHub()
        self.clock = clock

    async def __call__(self, delivery: Delivery) -> None:
        event = event_from_delivery(delivery)
        context = Context(delivery, self.storage, self.hub, self.clock)
        callbacks = sorted(self.router.fetch(event), key=handler_name)
        memos: list[str] = []  # this delivery's memos that exist now
        to_run: list[tuple[str, Callable[..., Any]]] = []
        for callback in callbacks:
            memo_key = f"{delivery.delivery_id}:{handler_name(callback)}"
            if await was_handled(self.storage, memo_key):
                memos.append(memo_key)
            else:
                to_run.append((memo_key, callback))
        failures: dict[str, BaseException] = {}
        for index, (memo_key, callback) in enumerate(to_run):
            name = handler_name(callback)
            try:
                await callback(event, context)
            except RateLimited as exc:
                # Routine while GitHub pauses the installation (the worker defers the
                # delivery); a traceback per delivery would only bury real failures.
                failures[name] = exc
                log.info("handler %s waits for GitHub: %s", name, exc, extra=context.log_extra())
                continue
            except Exception as exc:
                failures[name] = exc
                level = logging.DEBUG if is_github_failure(exc) else logging.WARNING
                log.log(
                    level,
                    "handler %s failed: %s",
                    name,
                    describe_failure(exc),
                    exc_info=exc,
                    extra=context.log_extra(),
                )
                continue
            if failures or index < len(to_run) - 1:
                # Only a retry reads it. The last handler of a run that has not failed is
                # followed by the delivery's completion, which says the same.
                await mark_handled(self.storage, memo_key, self.clock())
                memos.append(memo_key)
        if failures:
            raise HandlerFailures(failures)
        # The memo only serves retries of this delivery; once every handler is done it
        # would just grow storage forever.
        for memo_key in memos:
            await forget_handled(self.storage, memo_key)
