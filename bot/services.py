"""The collaborators handlers use besides the event, as one typed object per process.

The app builds `Services` when it starts (the GitHub client needs the HTTP session that
only exists then) and puts it in the `ServiceHub` it created with the application, so a
worker that dispatches a delivery always reaches the same, fully built object. Tests
build a hub with their own fakes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from cachetools import LRUCache

from bot.github.client import GitHubApp
from bot.judge.engine import JudgeEngine
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.link_health import LinkHealth
from bot.metrics import Metrics
from bot.notify.sender import Notifier
from bot.settings.merge import MergeSettings, default_merge_settings

# A repository's `models:` override gets an engine of its own; few repositories override,
# so a small bound keeps every live combination without growing without end.
REPO_ENGINES_KEPT = 64

T = TypeVar("T")
EngineKey = tuple[tuple[str, str | None], ...]


@dataclass
class Services:
    github: GitHubApp
    judge_settings: JudgeSettings
    engine: JudgeEngine
    llm_client: httpx.AsyncClient
    max_attempts: int = 1
    repo_engines: LRUCache[EngineKey, JudgeEngine] = field(
        default_factory=lambda: LRUCache(maxsize=REPO_ENGINES_KEPT)
    )
    merge: MergeSettings = field(default_factory=default_merge_settings)
    research: ResearchRules = field(default_factory=ResearchRules)
    # None in tests that build services by hand: nothing to notify.
    notifier: Notifier | None = None
    # The app's registry; tests that build services by hand count into their own.
    metrics: Metrics = field(default_factory=Metrics)


class StorageWrites(LinkHealth):
    """What this process last saw of writing to storage: a database that answers `SELECT 1`
    may still refuse every write (a full disk, SQLite locked by another process), so
    `/healthz` reads this beside the ping. Written by the webhook intake's 503 and the
    workers' loop; `/healthz` clears it once a probe write succeeds."""


class Doorbell:
    """Wakes a waiting loop in this process at once (the merge queue's worker when a
    handler made a queue head due); other replicas find the work on their own timer."""

    def __init__(self) -> None:
        self._rung = asyncio.Event()
        self.listening = False

    def ring(self) -> None:
        self._rung.set()

    async def wait(self, seconds: float) -> bool:
        """True when rung before `seconds` passed; the bell is reset either way."""
        try:
            async with asyncio.timeout(max(0.0, seconds)):
                await self._rung.wait()
        except TimeoutError:
            return False
        finally:
            self._rung.clear()
        return True


class ServicesNotReady(RuntimeError):
    """A handler ran before the app started, or in setup mode (no APP_ID yet)."""


class HubKey(Generic[T]):
    """A typed slot in the hub, owned by the package that reads it (as aiohttp's
    `AppKey`): the composition layer fills it, so a lower package reaches what a higher
    one provides without importing it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<HubKey {self.name}>"


class ServiceHub:
    """Where the app's `Services` live once it has started, and what the composition
    layer plugs into lower packages (`HubKey`s)."""

    def __init__(self, services: Services | None = None) -> None:
        self._services = services
        self._slots: dict[HubKey[Any], Any] = {}
        self.merge_doorbell = Doorbell()

    def plug(self, key: HubKey[T], value: T) -> None:
        self._slots[key] = value

    def plugged(self, key: HubKey[T]) -> T:
        try:
            value: T = self._slots[key]
        except KeyError:
            raise ServicesNotReady(f"nothing is plugged into {key.name}") from None
        return value

    def provide(self, services: Services) -> None:
        self._services = services

    @property
    def ready(self) -> bool:
        return self._services is not None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise ServicesNotReady("services are built when the configured app starts")
        return self._services
