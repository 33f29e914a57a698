"""Posting notices: best effort, in the background, once per event.

A notice is claimed in storage under its key before it is sent, so the same event met
again (a redelivered webhook, another replica) sends nothing; a notice that could not be
sent after every attempt gives its claim back, so a later retry of the event may try
again. Nothing here raises into the flow that noticed the event, and nothing waits for
the operator's endpoint except the background task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx

from bot.notify.notices import Notice, render
from bot.settings.notify import NotifySettings
from bot.storage.base import Storage

__all__ = ["SENT_NAMESPACE", "Notifier"]

log = logging.getLogger(__name__)

SENT_NAMESPACE = "notifications-sent"
OutcomeHook = Callable[[str, str], None]  # (kind, "sent" | "failed" | "duplicate")


def _no_metrics(kind: str, outcome: str) -> None:
    del kind, outcome


class Notifier:
    def __init__(
        self,
        settings: NotifySettings,
        client: httpx.AsyncClient,
        storage: Storage,
        *,
        on_outcome: OutcomeHook = _no_metrics,
        retry_base_seconds: float = 1.0,
    ) -> None:
        self._settings = settings
        self._client = client
        self._storage = storage
        self._on_outcome = on_outcome
        self._retry_base = retry_base_seconds
        self._pending: set[asyncio.Task[bool]] = set()

    @property
    def enabled(self) -> bool:
        return self._settings.enabled

    @property
    def outage_after(self) -> int:
        return self._settings.notify_outage_after

    def post(self, notice: Notice) -> None:
        """Send `notice` in the background; returns at once."""
        if not self.enabled:
            return
        task = asyncio.create_task(self.send(notice))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def drain(self, within_seconds: float) -> None:
        """Wait for notices in flight (at shutdown), at most `within_seconds`."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=within_seconds)

    async def send(self, notice: Notice) -> bool:
        """True when this call delivered the notice; never raises."""
        url = self._settings.notify_url
        if url is None:
            return False
        try:
            claimed = await self._storage.kv_put_if_absent(
                SENT_NAMESPACE, notice.key, {"kind": notice.kind.value}
            )
        except Exception:  # noqa: BLE001 - storage down: a possible duplicate beats a lost alert
            log.warning("notification %s: could not record it; sending anyway", notice.kind)
            claimed = True
        if not claimed:
            self._on_outcome(notice.kind.value, "duplicate")
            return False
        if await self._deliver(url.get_secret_value(), notice):
            self._on_outcome(notice.kind.value, "sent")
            return True
        self._on_outcome(notice.kind.value, "failed")
        try:
            await self._storage.kv_delete(SENT_NAMESPACE, notice.key)
        except Exception:  # noqa: BLE001 - any storage failure: the claim just stays
            log.warning("notification %s: could not release its claim", notice.kind)
        return False

    async def _deliver(self, url: str, notice: Notice) -> bool:
        body = render(notice)
        attempts = self._settings.notify_attempts
        for attempt in range(1, attempts + 1):
            problem = await self._attempt(url, body)
            if problem is None:
                return True
            # The URL is a credential: log the kind and the problem, never the address.
            log.warning(
                "notification %s: attempt %d of %d failed (%s)",
                notice.kind,
                attempt,
                attempts,
                problem,
            )
            if attempt < attempts:
                await asyncio.sleep(self._retry_base * 2 ** (attempt - 1))
        return False

    async def _attempt(self, url: str, body: dict[str, object]) -> str | None:
        try:
            response = await self._client.post(
                url, json=body, timeout=self._settings.notify_timeout_seconds
            )
        except httpx.HTTPError as exc:
            return type(exc).__name__
        if response.status_code >= 300:
            return f"HTTP {response.status_code}"
        return None
