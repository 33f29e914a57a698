"""The server's probe: at start, then every `JUDGE_PROBE_INTERVAL_SECONDS`, never on a request.

A health check that called every model would spend tokens (and a local model's CPU) each
time a load balancer looked, so the pages read a `ProbeBoard` instead: the latest report
and when it was measured, replaced whole by the background task. Until the first probe
finishes, or when probing is off, the board says why there is nothing yet (`note`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
from aiohttp import web

from bot.judge.doctor.probe import probe_settings
from bot.judge.doctor.report import DoctorReport
from bot.judge.providers import StructuredOutputMemory
from bot.judge.settings import JudgeSettings
from bot.lifetime import CleanupContext, every, running

logger = logging.getLogger(__name__)


NOT_CONFIGURED = "no judge tier is configured"
OFF = (
    "the server does not probe the judges (JUDGE_PROBE_INTERVAL_SECONDS is 0); run judge-bot doctor"
)
NOT_MEASURED = "not measured yet: the first probe runs at start"


def waiting_note(*, configured: bool, interval: float) -> str:
    """What the board says before it has a report (or for good, when nothing will come)."""
    if not configured:
        return NOT_CONFIGURED
    return NOT_MEASURED if interval > 0 else OFF


class ProbeBoard:
    """The latest report, shared by the background probe (writer) and the pages."""

    def __init__(self, note: str) -> None:
        self._report: DoctorReport | None = None
        self.note = note

    def current(self) -> DoctorReport | None:
        return self._report

    def replace(self, report: DoctorReport) -> None:
        self._report = report

    def detail(self) -> dict[str, Any]:
        """The probe's part of `/healthz?detail=1`."""
        if self._report is None:
            return {"measured_at": None, "ok": None, "tiers": [], "warnings": [], "note": self.note}
        return {**self._report.as_json(), "note": ""}


async def probe_forever(
    board: ProbeBoard,
    settings: JudgeSettings,
    client: httpx.AsyncClient,
    stop: asyncio.Event,
    interval: float,
) -> None:
    """Probe now and then every `interval` seconds until `stop` is set; one memory of
    what each endpoint accepted for the whole run, as the engine keeps one. Provider
    failures are the report's; anything else raised is logged and the loop goes on."""
    memory = StructuredOutputMemory()

    async def probe() -> None:
        try:
            board.replace(await probe_settings(settings, client, memory=memory))
        except Exception:
            # A bug here must not end the probing for the server's life: the board keeps
            # the last report (its time says how old it is) and the next round tries again.
            logger.exception("judge probe failed")

    await every(interval, stop, probe)


def probe_ctx(
    board: ProbeBoard,
    settings: JudgeSettings,
    *,
    interval: float,
    client: httpx.AsyncClient | None = None,
) -> CleanupContext:
    """An aiohttp cleanup context probing in the background for the app's life (start-up
    does not wait for it). Without `client` it opens its own for that life."""

    async def probing(app: web.Application) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            http = client
            if http is None:
                http = await stack.enter_async_context(httpx.AsyncClient())
            async with running(lambda stop: probe_forever(board, settings, http, stop, interval)):
                yield

    return probing
