"""Delivery workers: claim stored deliveries, dispatch them, retry with backoff, park failures.

    storage --claim (lease)--> Worker --dispatch--> handlers (one router per feature)
        ^                        |   renews the lease every heartbeat while they run
        +-- done / deferred to GitHub's reset / retry_at / failed (parked, never looping)

Leases. A claim leases a delivery for `lease_seconds`. While its handlers run, the worker renews
the lease every `heartbeat_seconds` (a third of the lease unless set), so a long judgment keeps
its delivery for as long as its process lives, and the delivery of a process that died is
claimed again (by another worker, or by this process after a restart) within one lease. A
renewal that finds the lease taken over means this worker stalled past it: its handlers are
cancelled, so the new owner runs them and nobody finishes the delivery twice. Only
`max_run_seconds`, far longer than a lease, stops handlers that are merely slow.

Intake first. Acknowledging a delivery is what GitHub waits for; processing it can wait a
moment. While webhook requests are being answered (`IntakeLoad`), a worker about to claim
gives way, for at most `GIVE_WAY_SECONDS` each time (`give_way_for`, pure), so a flood of
deliveries is acknowledged at full speed and worked off after, and a flood that never ends
still has its deliveries processed. At ordinary rates requests leave the loop idle most of
the time, and workers claim at once.

Failures. `settle_failure` (pure) decides. GitHub's rate limit (`RateLimited`) is no failure of
the delivery: it goes back to pending, due at GitHub's reset, with its attempt given back, so a
used-up rate limit never parks work. Any other failure is retried with capped exponential
backoff and parked after `max_attempts`. Each handler's success is remembered per delivery
(see `dispatch`), so a retried or deferred delivery does not repeat handlers that finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from bot.github.client import RateLimited
from bot.intake.dispatch import HandlerFailures
from bot.metrics import Metrics
from bot.settings import DEFAULT_MAX_RUN_SECONDS
from bot.storage.base import Delivery, Storage

log = logging.getLogger(__name__)

Dispatch = Callable[[Delivery], Awaitable[None]]

# Long enough that a burst is acknowledged before it is processed, short enough that a flood
# without end still has every worker claim about once a second.
GIVE_WAY_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class AttemptPolicy:
    max_attempts: int = 5
    base_seconds: float = 2.0
    max_seconds: float = 300.0


def next_attempt_at(policy: AttemptPolicy, attempts: int, now: datetime) -> datetime | None:
    """When to try a delivery again after `attempts` failed tries; None parks it.

    Exponential (base * 2^(n-1)) and capped, so a broken handler costs a bounded number of
    tries spread over minutes rather than a tight loop."""
    if attempts >= policy.max_attempts:
        return None
    delay = min(policy.max_seconds, policy.base_seconds * (2 ** max(0, attempts - 1)))
    return now + timedelta(seconds=delay)


@dataclass(frozen=True, slots=True)
class Defer:
    """Back to pending until `until`, the attempt given back: GitHub asked us to wait."""

    until: datetime


@dataclass(frozen=True, slots=True)
class Retry:
    """A failed attempt: try again at `at`."""

    at: datetime


@dataclass(frozen=True, slots=True)
class Park:
    """The last attempt failed: keep the delivery as failed."""


Settlement = Defer | Retry | Park


def settle_failure(
    exc: BaseException, attempts: int, policy: AttemptPolicy, now: datetime
) -> Settlement:
    """What becomes of a delivery whose `attempts`-th attempt raised `exc`.

    Nothing but rate limits: wait for the latest reset GitHub gave, never in the past, attempt
    given back. Any other failure among them costs the attempt (backoff, or park on the last
    one), and its retry still comes no earlier than a reset GitHub gave."""
    causes = list(exc.failures.values()) if isinstance(exc, HandlerFailures) else [exc]
    resets = [cause.reset_at for cause in causes if isinstance(cause, RateLimited)]
    latest = max(resets, default=None)
    if latest is not None and len(resets) == len(causes):
        return Defer(max(latest, now))
    retry_at = next_attempt_at(policy, attempts, now)
    if retry_at is None:
        return Park()
    return Retry(retry_at if latest is None else max(retry_at, latest))


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:2000]


def give_way_for(answering: int, waited: float, limit: float) -> float:
    """How much longer a worker about to claim waits for intake: 0 claims now.

    `answering` webhook requests are in progress, and the worker has waited `waited`
    seconds for them so far."""
    if answering <= 0:
        return 0.0
    return max(0.0, limit - waited)


class IntakeLoad:
    """The webhook requests being answered right now, for the workers to give way to, each
    time for at most `limit` seconds."""

    def __init__(self, limit: float = GIVE_WAY_SECONDS) -> None:
        self.limit = limit
        self.answering = 0
        self._quiet: list[asyncio.Future[None]] = []
        # One worker at a time waits for the quiet, the others behind it: when the last
        # request is answered, one waiter wakes, not the whole pool over and over.
        self._turn = asyncio.Lock()

    def request(self) -> _Answering:
        """Counts one request for as long as it is being answered (a context manager)."""
        return _Answering(self)

    def _answered(self) -> None:
        self.answering -= 1
        if self.answering == 0:
            self.wake()

    def wake(self) -> None:
        """Wakes the worker waiting for the quiet, to look again (also on stopping)."""
        waiters, self._quiet = self._quiet, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def give_way(self, stop: asyncio.Event) -> None:
        """Returns once no request is being answered, after `limit` seconds at the latest,
        or once `stop` is set and `wake` called."""
        if self.answering == 0:
            return
        started = time.monotonic()
        async with self._turn:
            while not stop.is_set():
                wait = give_way_for(self.answering, time.monotonic() - started, self.limit)
                if wait <= 0:
                    return
                quiet = asyncio.get_running_loop().create_future()
                self._quiet.append(quiet)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await quiet


class _Answering:
    """One request counted in `IntakeLoad` while its `with` block runs. A class rather than
    a generator-based context manager: every webhook request enters one, and this costs a
    third as much."""

    __slots__ = ("_load",)

    def __init__(self, load: IntakeLoad) -> None:
        self._load = load

    def __enter__(self) -> None:
        self._load.answering += 1

    def __exit__(self, *exc: object) -> None:
        self._load._answered()


class LeaseLost(Exception):
    """Another worker took the delivery over while this one was running its handlers."""


def _log_context(delivery: Delivery) -> dict[str, Any]:
    return {
        "delivery_id": delivery.delivery_id,
        "event": delivery.event,
        "action": delivery.action,
        "installation": delivery.installation_id,
        "repository": delivery.repository,
        "attempt": delivery.attempts,
    }


class Worker:
    """One claim-and-process loop. Several run concurrently per process."""

    def __init__(
        self,
        storage: Storage,
        dispatch: Dispatch,
        metrics: Metrics,
        *,
        policy: AttemptPolicy,
        lease_seconds: float,
        poll_interval: float,
        worker_id: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        heartbeat_seconds: float | None = None,
        max_run_seconds: float | None = DEFAULT_MAX_RUN_SECONDS,
    ) -> None:
        self.storage = storage
        self.dispatch = dispatch
        self.metrics = metrics
        self.policy = policy
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:12]}"
        self.clock = clock
        # A third of the lease: two renewals may be late or fail before the lease runs out.
        self.heartbeat_seconds = (
            heartbeat_seconds if heartbeat_seconds is not None else lease_seconds / 3
        )
        self.max_run_seconds = max_run_seconds

    async def run_once(self) -> int:
        """Claim one delivery and process it; returns how many were claimed (0 or 1).

        One at a time: a lease starts at the claim, so deliveries claimed in a batch
        would age while their predecessors run."""
        claimed = await self.storage.claim_deliveries(
            self.worker_id, 1, self.lease_seconds, self.clock()
        )
        for delivery in claimed:
            await self.process(delivery)
        return len(claimed)

    async def process(self, delivery: Delivery) -> None:
        context = _log_context(delivery)
        started = time.perf_counter()
        try:
            await self._run_leased(delivery)
        except asyncio.CancelledError:
            # Shutdown: leave the lease to expire so the delivery is picked up again.
            raise
        except LeaseLost:
            self._lost(delivery, context)
            return
        except Exception as exc:  # noqa: BLE001 - settled (deferred, retried, parked) and logged
            await self._settle(delivery, exc, context)
            return
        if not await self.storage.complete_delivery(
            delivery.delivery_id, self.worker_id, self.clock()
        ):
            self._lost(delivery, context)
            return
        self.metrics.processed_for(delivery.event).inc()
        self.metrics.processing_seconds_for(delivery.event).observe(time.perf_counter() - started)
        log.debug("delivery processed", extra=context)

    async def _run_leased(self, delivery: Delivery) -> None:
        """The handlers, with the lease renewed every heartbeat while they run. Raises what
        they raise, or LeaseLost (after cancelling them) if a renewal finds it taken over."""
        handlers = asyncio.create_task(
            self._run_handlers(delivery), name=f"{self.worker_id}:{delivery.delivery_id}"
        )
        try:
            while True:
                done, _ = await asyncio.wait({handlers}, timeout=self.heartbeat_seconds)
                if done:
                    return handlers.result()
                if not await self._renew(delivery):
                    raise LeaseLost(delivery.delivery_id)
        finally:
            if not handlers.done():
                handlers.cancel()
                # Let them unwind before the lease is given up or the worker moves on.
                await asyncio.gather(handlers, return_exceptions=True)

    async def _run_handlers(self, delivery: Delivery) -> None:
        budget = asyncio.timeout(self.max_run_seconds)
        try:
            async with budget:
                await self.dispatch(delivery)
        except TimeoutError as exc:
            if not budget.expired():
                raise  # a handler's own timeout, not ours
            raise TimeoutError(
                f"handlers still running after the maximum run time ({self.max_run_seconds:g} s)"
            ) from exc

    async def _renew(self, delivery: Delivery) -> bool:
        """False only when the lease is someone else's; a storage error proves nothing, and
        the next heartbeat tries again (the lease outlasts two missed ones)."""
        until = self.clock() + timedelta(seconds=self.lease_seconds)
        try:
            return await self.storage.renew_lease(delivery.delivery_id, self.worker_id, until)
        except Exception:
            log.warning(
                "could not renew the lease; will try again",
                exc_info=True,
                extra=_log_context(delivery),
            )
            return True

    async def _settle(self, delivery: Delivery, exc: Exception, context: dict[str, Any]) -> None:
        now = self.clock()
        outcome = settle_failure(exc, delivery.attempts, self.policy, now)
        error = describe_error(exc)
        if isinstance(outcome, Defer):
            kept = await self.storage.defer_delivery(
                delivery.delivery_id, self.worker_id, outcome.until
            )
        else:
            retry_at = outcome.at if isinstance(outcome, Retry) else None
            kept = await self.storage.release_delivery(
                delivery.delivery_id, self.worker_id, error, retry_at, now
            )
        if not kept:
            self._lost(delivery, context)
            return
        self._report(delivery.event, outcome, error, exc, context)

    def _report(
        self,
        event: str,
        outcome: Settlement,
        error: str,
        exc: Exception,
        context: dict[str, Any],
    ) -> None:
        if isinstance(outcome, Defer):
            self.metrics.deferred.labels(event=event).inc()
            # No traceback: waiting for GitHub's reset is routine, and may repeat a lot.
            log.info(
                "delivery deferred until %s: %s", outcome.until.isoformat(), error, extra=context
            )
        elif isinstance(outcome, Retry):
            self.metrics.retried.labels(event=event).inc()
            log.warning(
                "delivery failed, retry at %s: %s",
                outcome.at.isoformat(),
                error,
                exc_info=exc,
                extra=context,
            )
        else:
            self.metrics.failed.labels(event=event).inc()
            log.error("delivery parked as failed: %s", error, exc_info=exc, extra=context)

    def _lost(self, delivery: Delivery, context: dict[str, Any]) -> None:
        self.metrics.lease_lost.labels(event=delivery.event).inc()
        log.warning(
            "delivery taken over by another worker after this one's lease ran out; "
            "its handlers were stopped and the new owner finishes it",
            extra=context,
        )

    async def run(self, stop: asyncio.Event, wake: asyncio.Queue[None], intake: IntakeLoad) -> None:
        """Loop until `stop` is set: drain due work, then sleep until woken or polled.

        Each stored delivery wakes one worker (a token in `wake`), not all of them: a
        herd of workers racing for one delivery costs every loser a storage round trip.
        Each claim first gives way to the webhook requests in progress (`intake`)."""
        while not stop.is_set():
            await intake.give_way(stop)
            if stop.is_set():
                break
            try:
                claimed = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                # Storage hiccup: keep the loop alive; /healthz reports the store's state.
                log.exception("worker loop error", extra={"event": None})
                claimed = 0
            if claimed:
                continue
            try:
                async with asyncio.timeout(self.poll_interval):
                    await wake.get()
            except TimeoutError:
                pass


class WorkerPool:
    """Starts and stops N workers sharing one wake-up signal, and giving way to `intake`
    (the webhook handler counts its requests there)."""

    def __init__(self, workers: list[Worker], intake: IntakeLoad | None = None) -> None:
        self.workers = workers
        self.intake = intake if intake is not None else IntakeLoad()
        self.stop = asyncio.Event()
        # Bounded: once every worker has a token waiting, more wake-ups add nothing.
        self.wake: asyncio.Queue[None] = asyncio.Queue(maxsize=max(1, len(workers)))
        self._tasks: list[asyncio.Task[None]] = []

    def notify(self) -> None:
        # Full while the workers give way to a burst: every request of it ends here, and
        # a look costs less than the QueueFull that put_nowait would raise.
        if not self.wake.full():
            self.wake.put_nowait(None)

    def start(self) -> None:
        self.stop.clear()
        self._tasks = [
            asyncio.create_task(
                worker.run(self.stop, self.wake, self.intake), name=worker.worker_id
            )
            for worker in self.workers
        ]

    async def close(self, grace_seconds: float = 10.0) -> None:
        self.stop.set()
        self.intake.wake()
        for _ in self.workers:
            self.notify()
        if not self._tasks:
            return
        _done, pending = await asyncio.wait(self._tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
