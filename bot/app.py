"""The app factory: the only place that builds sessions, stores and workers.

POST {WEBHOOK_PATH} -> webhooks (verify, store, 202) -> WorkerPool -> Dispatcher -> routers
GET  /healthz       -> storage.ping, and writes (a probe write while they were failing);
                       ?detail=1 adds the judges' tiers, their latest probe and
                       GitHub's state
GET  /metrics       -> Prometheus text (the KPI gauges refreshed in the background)
GET  /dashboard     -> verdicts, KPIs, providers (with DASHBOARD_TOKEN; bot.dashboard)
GET  /              -> status page, or the registration page when APP_ID is unset
GET  /setup/callback -> (setup mode only) GitHub's return from registering the App

A request whose storage fails (the database gone, a full disk, SQLite locked by another
process) is answered 503 with Retry-After and one log line (`storage_failures`), never
aiohttp's 500; nothing is acknowledged that was not stored.
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import logging
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import httpx
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from gidgethub.routing import Router

from bot import __version__
from bot.dashboard.routes import add_dashboard
from bot.github.client import GitHubApp, GitHubHealth, RetryPolicy, describe_failure, host_of
from bot.intake.dispatch import Dispatcher
from bot.intake.housekeeping import prune_forever
from bot.intake.proxy import webhook_proxy_ctx
from bot.intake.recovery import missed_deliveries_ctx
from bot.intake.webhooks import make_webhook_handler
from bot.intake.worker import AttemptPolicy as DeliveryRetryPolicy
from bot.intake.worker import Worker, WorkerPool
from bot.judge.doctor.background import ProbeBoard, probe_ctx, waiting_note
from bot.judge.engine import JudgeEngine
from bot.judge.engine.self_check import health_detail, self_check_ctx
from bot.judge.engine.tier_status import TierBoard, statuses_from_settings
from bot.judge.settings import JudgeSettings
from bot.judging.reactions import REACTIONS
from bot.lifetime import CleanupContext, Clock
from bot.merging.queue_worker import merge_queue_ctx
from bot.metrics import CONTENT_TYPE_LATEST, Metrics
from bot.notify.sender import Notifier
from bot.pages import render_status_page
from bot.reactions import build_reactions
from bot.registration.routes import Registration, add_registration
from bot.reports.kpi_metrics import KpiGauges, KpiRefresher, kpi_metrics_ctx
from bot.reports.thresholds import CalibrationThresholds
from bot.routing import build_router
from bot.services import ServiceHub, Services, StorageWrites
from bot.settings import Settings, load_judge_section, load_judge_settings
from bot.settings.features import FeatureSettings, load_feature_settings
from bot.storage import storage_from_url
from bot.storage.base import MAX_BODY_BYTES, Storage, StorageUnavailable

log = logging.getLogger(__name__)

SETTINGS = web.AppKey("settings", Settings)
STORAGE = web.AppKey("storage", Storage)
METRICS = web.AppKey("metrics", Metrics)
POOL = web.AppKey("pool", WorkerPool)
SERVICES = web.AppKey("services", ServiceHub)
# Each judge tier's latest status: pages read it, the provider self-check replaces it.
TIER_BOARD = web.AppKey("tier_board", TierBoard)
# The latest probe of every judge (`judge-bot doctor`'s facts), measured in the background.
DOCTOR_BOARD = web.AppKey("doctor_board", ProbeBoard)
# What this process last saw of GitHub, and of writing to storage: pages and /healthz read them.
GITHUB_HEALTH = web.AppKey("github_health", GitHubHealth)
STORAGE_WRITES = web.AppKey("storage_writes", StorageWrites)

NOTIFY_DRAIN_SECONDS = 5.0
# What a 503 for a storage failure asks the sender to wait: a database restart takes seconds.
STORAGE_RETRY_AFTER_SECONDS = 30
# The shortest wait of a delivery for GitHub, whatever JUDGE_RETRY_BASE_SECONDS says.
OUTAGE_SHORTEST_WAIT = 0.01


def _utc_now() -> datetime:
    return datetime.now(UTC)


def create_app(
    settings: Settings,
    *,
    storage: Storage | None = None,
    github: GitHubApp | None = None,
    judge_settings: JudgeSettings | None = None,
    features: FeatureSettings | None = None,
    router: Router | None = None,
    start_workers: bool = True,
    clock: Clock = _utc_now,
) -> web.Application:
    """Build the application. Nothing connects until the app starts (cleanup contexts).

    `github` lets tests pass a GitHubApp pointed at a fake server; otherwise it is built
    from `settings`. `judge_settings` defaults to what `JUDGE_*` says now (environment, then
    .env, as `serve` reads it); the services and the pages share those settings.
    `features` (merge queue, research rubric, notifications) likewise.
    """
    writes = StorageWrites()
    app = web.Application(
        client_max_size=MAX_BODY_BYTES + 1, middlewares=[storage_failures(writes, clock)]
    )
    metrics = Metrics()
    store = storage if storage is not None else storage_from_url(settings.database_url)
    hub = ServiceHub()
    hub.plug(REACTIONS, build_reactions())
    # One router shared by intake and the workers: intake stores what the router has no
    # callback for as done.
    routes = router or build_router()
    judge_settings = judge_settings if judge_settings is not None else load_judge_settings()
    feature_settings = features if features is not None else load_feature_settings()
    board = TierBoard(statuses_from_settings(judge_settings))
    dispatcher = Dispatcher(routes, store, hub, clock)
    pool = _worker_pool(settings, store, dispatcher, metrics, clock, writes)
    health = github.health if github is not None else GitHubHealth(host_of(settings.github_api_url))
    app[GITHUB_HEALTH] = health
    app[STORAGE_WRITES] = writes
    app[SETTINGS] = settings
    app[STORAGE] = store
    app[METRICS] = metrics
    app[SERVICES] = hub
    app[POOL] = pool
    app[TIER_BOARD] = board
    probe_every = settings.probe_interval_seconds
    doctor = ProbeBoard(
        waiting_note(configured=judge_settings.llm_configured, interval=probe_every)
    )
    app[DOCTOR_BOARD] = doctor

    app.cleanup_ctx.extend(
        [
            _storage_ctx(store),
            _services_ctx(
                settings, store, metrics, hub, github, health, judge_settings, feature_settings
            ),
            merge_queue_ctx(store, hub, clock, enabled=start_workers and settings.configured),
            _workers_ctx(settings, store, pool, clock, start_workers),
            # After the services: recovery asks GitHub through the App's client in `hub`.
            missed_deliveries_ctx(settings, store, hub, metrics, clock),
            webhook_proxy_ctx(settings),
        ]
    )
    if settings.self_check_interval_seconds > 0:
        app.cleanup_ctx.append(
            self_check_ctx(
                board, judge_settings, metrics, interval=settings.self_check_interval_seconds
            )
        )
    # A paid judgment per seat, on every replica: its own interval, never the free lookup's.
    if probe_every > 0 and judge_settings.llm_configured:
        app.cleanup_ctx.append(probe_ctx(doctor, judge_settings, interval=probe_every))
    thresholds = _kpi_gauges(app, settings, store, metrics, clock)
    if settings.configured:
        app.router.add_get("/", _status_page)
    else:
        add_registration(app, Registration(settings, board, clock))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    _add_webhook(app, routes, clock)
    add_dashboard(app, settings, store, tiers=board.current, thresholds=thresholds, clock=clock)
    # The last cleanup context: its startup runs after the others', so what they built is
    # frozen too (what on_startup callbacks build after it is not, and need not be).
    app.cleanup_ctx.append(_collector_ctx)
    return app


def _add_webhook(app: web.Application, routes: Router, clock: Clock) -> None:
    """The webhook intake once the App is set up; until then, a 503 that says why."""
    settings, pool = app[SETTINGS], app[POOL]
    if settings.configured and settings.webhook_secret is not None:
        handler = make_webhook_handler(
            app[STORAGE],
            settings.webhook_secret.get_secret_value(),
            app[METRICS],
            pool.notify,
            clock,
            router=routes,
            intake=pool.intake,
        )
        app.router.add_post(settings.webhook_path, handler)
    else:
        app.router.add_post(settings.webhook_path, _not_configured)


def _kpi_gauges(
    app: web.Application, settings: Settings, store: Storage, metrics: Metrics, clock: Clock
) -> CalibrationThresholds | None:
    """The KPI gauges on /metrics, refreshed for the app's life unless turned off; the
    calibration limits they were read with (the dashboard shares them)."""
    if settings.kpi_refresh_seconds <= 0:
        return None
    thresholds = load_judge_section(CalibrationThresholds)
    refresher = KpiRefresher(store, KpiGauges(metrics.registry), thresholds, clock)
    app.cleanup_ctx.append(kpi_metrics_ctx(refresher, settings.kpi_refresh_seconds))
    return thresholds


def _worker_pool(
    settings: Settings,
    store: Storage,
    dispatcher: Dispatcher,
    metrics: Metrics,
    clock: Clock,
    writes: StorageWrites,
) -> WorkerPool:
    policy = DeliveryRetryPolicy(
        max_attempts=settings.max_attempts,
        base_seconds=settings.retry_base_seconds,
        max_seconds=settings.retry_max_seconds,
        outage_window=timedelta(hours=settings.github_outage_hours),
        # The same schedule as a failed attempt's, never none at all: a delivery waiting for
        # GitHub must not be claimed again at once, over and over, while GitHub is down.
        outage_base_seconds=max(settings.retry_base_seconds, OUTAGE_SHORTEST_WAIT),
        outage_max_seconds=max(settings.retry_max_seconds, OUTAGE_SHORTEST_WAIT),
    )
    return WorkerPool(
        [
            Worker(
                store,
                dispatcher,
                metrics,
                policy=policy,
                lease_seconds=settings.lease_seconds,
                max_run_seconds=settings.max_run_seconds,
                poll_interval=settings.poll_interval,
                clock=clock,
                writes=writes,
            )
            for _ in range(settings.workers)
        ]
    )


def _storage_ctx(store: Storage) -> CleanupContext:
    async def storage_ctx(app: web.Application) -> AsyncIterator[None]:
        try:
            await store.open()
        except Exception as exc:  # any driver's failure to connect means the same to a user
            raise StorageUnavailable(f"{type(exc).__name__}: {exc}") from exc
        yield
        await store.close()

    return storage_ctx


def _services_ctx(
    settings: Settings,
    store: Storage,
    metrics: Metrics,
    hub: ServiceHub,
    github: GitHubApp | None,
    health: GitHubHealth,
    judge_settings: JudgeSettings,
    features: FeatureSettings,
) -> CleanupContext:
    """The HTTP clients live as long as the app; the services built on them go in `hub`.
    In setup mode (no APP_ID) there is no GitHub client and so no services. The GitHub
    client's session honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the LLM's does."""

    async def services_ctx(app: web.Application) -> AsyncIterator[None]:
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60), trust_env=True)
        llm_client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0))
        client = github
        if client is None and settings.configured:
            client = GitHubApp(
                app_id=str(settings.app_id),
                private_key=settings.private_key_pem(),
                session=session,
                api_url=settings.github_api_url,
                graphql_url=settings.graphql_url,
                policy=RetryPolicy(write_interval=settings.write_interval),
                on_response=metrics.observe_github_response,
                on_pause=metrics.observe_github_pause,
                health=health,
            )
        notifier = Notifier(
            features.notify, llm_client, store, on_outcome=metrics.observe_notification
        )
        if client is not None:
            hub.provide(
                Services(
                    github=client,
                    judge_settings=judge_settings,
                    engine=JudgeEngine.from_settings(judge_settings, llm_client, store),
                    llm_client=llm_client,
                    max_attempts=settings.max_attempts,
                    merge=features.merge,
                    research=features.research,
                    notifier=notifier,
                    metrics=metrics,
                )
            )
        yield
        # Notices still being sent get a moment before their client closes.
        await notifier.drain(within_seconds=NOTIFY_DRAIN_SECONDS)
        await llm_client.aclose()
        await session.close()

    return services_ctx


def _workers_ctx(
    settings: Settings, store: Storage, pool: WorkerPool, clock: Clock, start_workers: bool
) -> CleanupContext:
    async def workers_ctx(app: web.Application) -> AsyncIterator[None]:
        stop_housekeeping = asyncio.Event()
        housekeeping = asyncio.create_task(
            prune_forever(store, settings.delivery_retention_days, clock, stop_housekeeping)
        )
        if start_workers and settings.configured:
            pool.start()
        yield
        await pool.close()
        stop_housekeeping.set()
        await housekeeping

    return workers_ctx


# The collector's first-generation threshold while an app runs; Python's default is 700.
COLLECT_AFTER_ALLOCATIONS = 10_000


class _CollectorTuning:
    """The garbage collector as a webhook server needs it, while any app runs.

    Every queued delivery is decoded into a few hundred objects (at intake too, until it read
    only a few fields; by the worker still), mostly freed moments later. At Python's threshold
    a collection ran every
    twenty-odd deliveries, walked the payloads in flight and moved them to older generations,
    to be walked again there (a burst's objects in flight stay below this threshold); and
    every full pass walked all the process holds once started (modules, clients, the app:
    some 80,000 objects), which live as long as it does. Measured in a burst of 29 KB
    deliveries: 20-55 us of collector time per delivery, and a full pass every few thousand
    deliveries stalling the event loop for about 70 ms; with the startup heap frozen and the
    threshold raised, under 1 us and no full pass. The objects frozen at start are unfrozen
    once the last app stops, so garbage among them is still collected then."""

    def __init__(self) -> None:
        self.running = 0
        self.saved_threshold = gc.get_threshold()

    def start(self) -> None:
        if self.running == 0:
            self.saved_threshold = gc.get_threshold()
            gc.set_threshold(COLLECT_AFTER_ALLOCATIONS, *self.saved_threshold[1:])
        self.running += 1
        gc.freeze()

    def stop(self) -> None:
        self.running -= 1
        if self.running == 0:
            gc.unfreeze()
            gc.set_threshold(*self.saved_threshold)


_COLLECTOR = _CollectorTuning()


async def _collector_ctx(app: web.Application) -> AsyncIterator[None]:
    _COLLECTOR.start()
    yield
    _COLLECTOR.stop()


def storage_failure(exc: BaseException) -> bool:
    """Whether `exc` is the database failing rather than the App's bug: either backend's
    driver (asyncpg is matched by module, so a SQLite deployment never imports it), the
    disk or the network to the database, or a store that could not open. An HTTP client's
    error is some other service's."""
    if isinstance(exc, aiohttp.ClientError):
        return False
    if isinstance(exc, StorageUnavailable | sqlite3.Error | OSError):
        return True
    return any(cls.__module__.split(".")[0] == "asyncpg" for cls in type(exc).__mro__)


def storage_failures(writes: StorageWrites, clock: Clock) -> Middleware:
    """The middleware answering a request whose storage failed: a deliberate 503 with
    Retry-After and one log line (its traceback at DEBUG), instead of aiohttp's 500 and a
    traceback per request. A failed write (any request but a GET) is noted in `writes` for
    /healthz. Nothing else is caught."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:
            if not storage_failure(exc):
                raise
            error = describe_failure(exc)
            if request.method != "GET":
                writes.failed(clock(), error)
            context = {"delivery_id": request.headers.get("X-GitHub-Delivery")}
            log.error(
                "storage failed, answered 503: %s %s: %s",
                request.method,
                request.path,
                error,
                extra=context,
            )
            log.debug("storage failure", exc_info=exc, extra=context)
            return web.json_response(
                {"ok": False, "error": "storage unavailable; try again later"},
                status=503,
                headers={"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)},
            )

    return middleware


async def _status_page(request: web.Request) -> web.Response:
    counts = await request.app[STORAGE].count_deliveries()
    tiers = request.app[TIER_BOARD].current()
    text = render_status_page(
        request.app[SETTINGS],
        counts,
        __version__,
        tiers,
        github=request.app[GITHUB_HEALTH],
        writes=request.app[STORAGE_WRITES],
        probe=request.app[DOCTOR_BOARD],
    )
    return web.Response(text=text, content_type="text/html")


async def _writes_work(app: web.Application, clock: Clock) -> bool:
    """While writes were seen failing, one probe write says whether they work again."""
    writes = app[STORAGE_WRITES]
    if not writes.failing:
        return True
    now = clock()
    try:
        await app[STORAGE].write_probe(now)
    except Exception as exc:  # noqa: BLE001 - any failure to write means "unhealthy"
        writes.failed(now, describe_failure(exc))
        return False
    writes.succeeded(now)
    return True


async def _healthz(request: web.Request) -> web.Response:
    try:
        answers = await request.app[STORAGE].ping()
    except Exception as exc:  # noqa: BLE001 - any storage failure means "unhealthy"
        log.warning("health check: storage did not answer: %s", describe_failure(exc))
        answers = False
    writing = answers and await _writes_work(request.app, _utc_now)
    healthy = answers and writing
    body: dict[str, object] = {"status": "ok" if healthy else "unavailable", "storage": healthy}
    detail = request.query.get("detail") == "1"
    if request.app[STORAGE_WRITES].failing or detail:
        body["storage_writes"] = request.app[STORAGE_WRITES].detail()
    if detail:
        # Informational: a missing model fails its tier open, never the service's health;
        # GitHub's outage is not this server's, and restarting it would not end it.
        judge = health_detail(request.app[TIER_BOARD].current())
        judge["probe"] = request.app[DOCTOR_BOARD].detail()
        body["judge"] = judge
        if request.app[SETTINGS].configured:
            body["github"] = request.app[GITHUB_HEALTH].detail()
    return web.json_response(body, status=200 if healthy else 503)


def metrics_allowed(token: str | None, authorization: str | None) -> bool:
    """Whether a request may read /metrics: always without a token, else only with
    `Bearer <token>` (compared in constant time)."""
    if token is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


async def _metrics(request: web.Request) -> web.Response:
    secret = request.app[SETTINGS].metrics_token
    token = None if secret is None else secret.get_secret_value()
    if not metrics_allowed(token, request.headers.get("Authorization")):
        return web.json_response(
            {"ok": False, "error": "send Authorization: Bearer <METRICS_TOKEN>"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    metrics = request.app[METRICS]
    try:
        metrics.set_queue_depth(await request.app[STORAGE].count_deliveries())
    except Exception:  # metrics must still render when storage is down
        log.exception("metrics: could not read queue depth")
    return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _not_configured(request: web.Request) -> web.Response:
    return web.json_response(
        {"ok": False, "error": "judge-bot is not configured yet: set APP_ID (see /)"},
        status=503,
    )
