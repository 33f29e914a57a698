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

Failures. `settle_failure` (pure) decides. Waiting for GitHub is no failure of the delivery:
it goes back to pending with its attempt given back, so it never parks work.

* GitHub's rate limit (`RateLimited`): due at GitHub's reset.
* GitHub unreachable, answering 5xx or not in time (`GitHubUnavailable`), for as long as the
  delivery is younger than `outage_window`: due at the next try of the outage's schedule
  (`outage_retry_at`), a wait that doubles from `outage_base_seconds` with how long the
  delivery and the outage have lasted, up to `outage_max_seconds`. The tries fall on common
  instants for every delivery of the outage, in every replica, so when GitHub answers again
  they are due together and claimed oldest first.

Any other failure (the App's own) is retried with capped exponential backoff and parked after
`max_attempts`; so is an outage failure of a delivery older than the window. Each handler's
success is remembered per delivery (see `dispatch`), so a retried or deferred delivery does not
repeat handlers that finished.

Logs. One line per failed attempt, naming the handler, the host, the request and the cause
(`describe_error`); the tracebacks of GitHub's failures go to DEBUG (the dispatcher's line),
an unexpected exception's stays at WARNING where the dispatcher logs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from bot.github.client import GitHubUnavailable, RateLimited, describe_failure
from bot.intake.dispatch import HandlerFailures, is_github_failure
from bot.metrics import Metrics
from bot.services import StorageWrites
from bot.settings import DEFAULT_MAX_RUN_SECONDS
from bot.storage.base import Delivery, Storage

log = logging.getLogger(__name__)

Dispatch = Callable[[Delivery], Awaitable[None]]

# Long enough that a burst is acknowledged before it is processed, short enough that a flood
# without end still has every worker claim about once a second.
GIVE_WAY_SECONDS: Final = 1.0


# A delivery waits for GitHub to answer again this long after it arrived, by default.
DEFAULT_OUTAGE_WINDOW: Final = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class AttemptPolicy:
    max_attempts: int = 5
    base_seconds: float = 2.0
    max_seconds: float = 300.0
    # Waiting for GitHub (`outage_retry_at`): how long, and the first and longest waits.
    outage_window: timedelta = DEFAULT_OUTAGE_WINDOW
    outage_base_seconds: float = 2.0
    outage_max_seconds: float = 300.0


def next_attempt_at(policy: AttemptPolicy, attempts: int, now: datetime) -> datetime | None:
    """When to try a delivery again after `attempts` failed tries; None parks it.

    Exponential (base * 2^(n-1)) and capped, so a broken handler costs a bounded number of
    tries spread over minutes rather than a tight loop."""
    if attempts >= policy.max_attempts:
        return None
    delay = min(policy.max_seconds, policy.base_seconds * (2 ** max(0, attempts - 1)))
    return now + timedelta(seconds=delay)


def outage_retry_at(policy: AttemptPolicy, waited: float, now: datetime) -> datetime:
    """When a delivery that found GitHub unavailable is tried again, `waited` seconds into
    its wait (the longer of its age and the outage's).

    The wait doubles from `outage_base_seconds` with `waited`, up to `outage_max_seconds`
    (the largest power-of-two multiple of the base below it), and ends at the next multiple
    of itself since the epoch. The multiples of a longer wait are multiples of every shorter
    one: deliveries waiting in one outage, in any replica, are due at common instants, and
    when GitHub answers again the oldest is claimed first."""
    base = max(policy.outage_base_seconds, 0.001)
    gap = base
    while gap * 2 <= min(policy.outage_max_seconds, max(waited, 0.0)):
        gap *= 2
    return datetime.fromtimestamp((math.floor(now.timestamp() / gap) + 1) * gap, UTC)


@dataclass(frozen=True, slots=True)
class Defer:
    """Back to pending until `until`, the attempt given back: GitHub asked us to wait, or
    (`outage`) does not answer."""

    until: datetime
    outage: bool = False


@dataclass(frozen=True, slots=True)
class Retry:
    """A failed attempt: try again at `at`."""

    at: datetime


@dataclass(frozen=True, slots=True)
class Park:
    """The last attempt failed: keep the delivery as failed."""


Settlement = Defer | Retry | Park


def settle_failure(
    exc: BaseException,
    attempts: int,
    policy: AttemptPolicy,
    now: datetime,
    received_at: datetime | None = None,
) -> Settlement:
    """What becomes of a delivery received at `received_at` (None: now) whose
    `attempts`-th attempt raised `exc`.

    Nothing but waits for GitHub (rate limits; outages while the delivery is younger than
    `outage_window`): due when the latest of them ends, never in the past, attempt given
    back. Any other failure among them costs the attempt (backoff, or park on the last
    one), and its retry still comes no earlier than a reset GitHub gave."""
    causes = list(exc.failures.values()) if isinstance(exc, HandlerFailures) else [exc]
    resets = [cause.reset_at for cause in causes if isinstance(cause, RateLimited)]
    latest = max(resets, default=None)
    age = 0.0 if received_at is None else (now - received_at).total_seconds()
    outages = [
        cause
        for cause in causes
        if isinstance(cause, GitHubUnavailable) and age < policy.outage_window.total_seconds()
    ]
    if len(resets) + len(outages) == len(causes):
        waits = list(resets)
        for outage in outages:
            since = outage.failing_since
            lasted = 0.0 if since is None else (now - since).total_seconds()
            waits.append(outage_retry_at(policy, max(age, lasted), now))
        return Defer(max(max(waits), now), outage=bool(outages))
    retry_at = next_attempt_at(policy, attempts, now)
    if retry_at is None:
        return Park()
    return Retry(retry_at if latest is None else max(retry_at, latest))


def describe_error(exc: BaseException) -> str:
    """The delivery's `last_error`: each failed handler's exception with the host and
    request of a GitHub failure (`describe_failure`), on one line."""
    if isinstance(exc, HandlerFailures):
        text = "; ".join(f"{name}: {describe_failure(e)}" for name, e in exc.failures.items())
    else:
        text = describe_failure(exc)
    return text[:2000]


def _traceback_of(exc: Exception) -> Exception | None:
    """The traceback a failed attempt's line carries: none for the handlers' failures (the
    dispatcher logged each one) or GitHub's (its message says where and why)."""
    if isinstance(exc, HandlerFailures) or is_github_failure(exc):
        return None
    return exc


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


class DeliveryLeaseLost(Exception):
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
        writes: StorageWrites | None = None,
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
        self.writes = writes

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
        except DeliveryLeaseLost:
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
        took = time.perf_counter() - started
        self.metrics.processing_seconds_for(delivery.event).observe(took)
        # One line per delivery done, so an operator can tell the App is working.
        log.info("delivery processed in %.2f s", took, extra=context)

    async def _run_leased(self, delivery: Delivery) -> None:
        """The handlers, with the lease renewed every heartbeat while they run. Raises what
        they raise, or DeliveryLeaseLost (after cancelling them) if a renewal finds it
        taken over."""
        handlers = asyncio.create_task(
            self._run_handlers(delivery), name=f"{self.worker_id}:{delivery.delivery_id}"
        )
        try:
            while True:
                done, _ = await asyncio.wait({handlers}, timeout=self.heartbeat_seconds)
                if done:
                    return handlers.result()
                if not await self._renew(delivery):
                    raise DeliveryLeaseLost(delivery.delivery_id)
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
        outcome = settle_failure(exc, delivery.attempts, self.policy, now, delivery.received_at)
        error = describe_error(exc)
        if isinstance(outcome, Defer):
            kept = await self.storage.defer_delivery(
                delivery.delivery_id, self.worker_id, outcome.until, error
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
        """One line per failed attempt (see the module docstring)."""
        until = outcome.until.isoformat() if isinstance(outcome, Defer) else None
        if isinstance(outcome, Defer) and outcome.outage:
            self.metrics.deferred.labels(event=event).inc()
            log.warning(
                "delivery waits for GitHub, next try at %s: %s", until, error, extra=context
            )
        elif isinstance(outcome, Defer):
            self.metrics.deferred.labels(event=event).inc()
            # Waiting for GitHub's reset is routine, and may repeat a lot.
            log.info("delivery deferred until %s: %s", until, error, extra=context)
        elif isinstance(outcome, Retry):
            self.metrics.retried.labels(event=event).inc()
            log.warning(
                "delivery failed, retry at %s: %s",
                outcome.at.isoformat(),
                error,
                exc_info=_traceback_of(exc),
                extra=context,
            )
        else:
            self.metrics.failed.labels(event=event).inc()
            log.error(
                "delivery parked as failed: %s", error, exc_info=_traceback_of(exc), extra=context
            )

    def _lost(self, delivery: Delivery, context: dict[str, Any]) -> None:
        self.metrics.lease_lost.labels(event=delivery.event).inc()
        log.warning(
            "delivery taken over by another worker after this one's lease ran out; "
            "its handlers were stopped and the new owner finishes it",
            extra=context,
        )

    def _storage_failed(self, exc: Exception) -> None:
        error = describe_failure(exc)
        if self.writes is not None:
            self.writes.failed(self.clock(), error)
        log.warning("worker loop: storage failed: %s", error, extra={"event": None})
        log.debug("worker loop error", exc_info=exc, extra={"event": None})

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
            except Exception as exc:  # noqa: BLE001 - logged, reported on /healthz
                # Storage hiccup: keep the loop alive, one line a poll.
                self._storage_failed(exc)
                claimed = 0
            if claimed:
                if self.writes is not None:
                    self.writes.succeeded(self.clock())
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
