"""The dashboard's routes: the page, signing in and out, and `add_dashboard`.

    GET  /dashboard           the page (bearer token or session cookie), else 401 + sign-in form
    GET  /dashboard/sign-in   the form
    POST /dashboard/sign-in   token in, session cookie out (HttpOnly, SameSite=Strict)
    POST /dashboard/sign-out  the cookie cleared

Without DASHBOARD_TOKEN every route answers 404 with how to turn the dashboard on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from urllib.parse import parse_qs

from aiohttp import web

from bot.dashboard.access import (
    PLAIN_COOKIE,
    SECURE_COOKIE,
    SESSION_LIFETIME,
    Visitor,
    admitted,
    cookie_name,
    is_https,
    issue_session,
    origin_allowed,
    session_valid,
    token_valid,
)
from bot.dashboard.filters import DEFAULT_DAYS, Filter, FilterError, parse_filter
from bot.dashboard.freshness import DEFAULT_FRESHNESS, Freshness, ViewCache
from bot.dashboard.live import Live, LiveViews
from bot.dashboard.render import (
    FreshnessNote,
    render_dashboard,
    render_message,
    render_sign_in,
)
from bot.github.web import web_url
from bot.judge.engine.tier_status import TierStatus
from bot.lifetime import Clock
from bot.pages import tier_rows
from bot.reports.thresholds import CalibrationThresholds
from bot.settings import Settings, load_judge_section
from bot.storage.base import Storage

log = logging.getLogger(__name__)

PAGE = "/dashboard"
SIGN_IN = "/dashboard/sign-in"
SIGN_OUT = "/dashboard/sign-out"
MAX_FORM_BYTES = 4096
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    # same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on our
    # own form posts; links to GitHub carry rel="noreferrer" besides.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}
OFF_MESSAGE = (
    "Set DASHBOARD_TOKEN to a long random value (for example the output of "
    "`openssl rand -hex 32`) and restart judge-bot. Scripts then send "
    "`Authorization: Bearer <token>`; people sign in at /dashboard/sign-in with the token."
)

Tiers = Callable[[], Sequence[TierStatus]]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _html(text: str, status: int = 200, **headers: str) -> web.Response:
    return web.Response(
        text=text, status=status, content_type="text/html", headers={**HEADERS, **headers}
    )


def _redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={**HEADERS, "Location": location})


class Dashboard:
    """The routes of a dashboard that is on: `token` is DASHBOARD_TOKEN's value."""

    def __init__(
        self,
        token: str,
        base_url: str | None,
        storage: Storage,
        thresholds: CalibrationThresholds,
        tiers: Tiers,
        clock: Clock,
        freshness: Freshness,
        monotonic: Callable[[], float] = time.monotonic,
        web_url: str = "https://github.com",
    ) -> None:
        self._token = token
        self._base_url = base_url
        self._tiers = tiers
        self._clock = clock
        self._monotonic = monotonic
        self.live = LiveViews(storage, thresholds, clock, web_url, freshness.kept_facts, monotonic)
        self.views: ViewCache[Filter, Live] = ViewCache(
            self.live.compute, freshness, monotonic, self.live.update
        )

    def _secure(self, request: web.Request) -> bool:
        return is_https(request.scheme, self._base_url)

    def _session(self, request: web.Request) -> str | None:
        return request.cookies.get(cookie_name(self._secure(request)))

    def _origin_ok(self, request: web.Request) -> bool:
        return origin_allowed(
            request.headers.get("Origin"), request.scheme, request.host, self._base_url
        )

    async def page(self, request: web.Request) -> web.Response:
        now = self._clock()
        cookie = self._session(request)
        visitor = Visitor(request.headers.get("Authorization"), cookie, now)
        if not admitted(self._token, visitor):
            return _html(
                render_sign_in("Sign in to see the dashboard."),
                401,
                **{"WWW-Authenticate": 'Bearer realm="dashboard"'},
            )
        try:
            chosen = parse_filter(request.query)
        except FilterError as exc:
            link = f"{PAGE}?{Filter(None, DEFAULT_DAYS).query()}"
            return _html(
                render_message("Bad filter", str(exc), kind="problem", link=link,
                               link_text="the dashboard without filters"),
                400,
            )  # fmt: skip
        try:
            cached = await self.views.get(chosen)
        except Exception:  # any storage failure: the page says so, the log has the cause
            log.exception("dashboard: the figures could not be read")
            return _html(
                render_message(
                    "Dashboard unavailable",
                    "The verdict log could not be read just now; /healthz tells whether "
                    "storage answers.",
                    kind="problem",
                ),
                503,
            )
        signed_in = session_valid(self._token, cookie, now)
        fresh = FreshnessNote(
            as_of=cached.value.as_of,
            read_seconds_ago=self._monotonic() - cached.computed_at,
            read_every_seconds=self.views.policy.max_age_seconds,
        )
        tiers = tier_rows(self._tiers())
        return _html(render_dashboard(cached.value.view, tiers, fresh, signed_in))

    async def sign_in_form(self, request: web.Request) -> web.Response:
        if session_valid(self._token, self._session(request), self._clock()):
            return _redirect(PAGE)
        return _html(render_sign_in("Sign in with the dashboard token (DASHBOARD_TOKEN)."))

    async def sign_in(self, request: web.Request) -> web.Response:
        if not self._origin_ok(request):
            return _refused_origin()
        body = await request.content.read(MAX_FORM_BYTES + 1)
        if len(body) > MAX_FORM_BYTES:
            return _html(render_sign_in("The form was too large.", "Send only the token."), 413)
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
        given = (fields.get("token") or [""])[0]
        if not given or not token_valid(self._token, given):
            return _html(render_sign_in("Try again.", "That is not the dashboard token."), 401)
        secure = self._secure(request)
        response = _redirect(PAGE)
        response.set_cookie(
            cookie_name(secure),
            issue_session(self._token, self._clock()),
            max_age=int(SESSION_LIFETIME.total_seconds()),
            path="/",
            secure=secure,
            httponly=True,
            samesite="Strict",
        )
        return response

    async def sign_out(self, request: web.Request) -> web.Response:
        if not self._origin_ok(request):
            return _refused_origin()
        response = _redirect(SIGN_IN)
        for name in (SECURE_COOKIE, PLAIN_COOKIE):
            if name in request.cookies:
                response.del_cookie(name, path="/", secure=name == SECURE_COOKIE)
        return response


DASHBOARD = web.AppKey("dashboard", Dashboard)


def _refused_origin() -> web.Response:
    return _html(
        render_message(
            "Refused",
            "This form was sent from another site. Open the dashboard and sign in there.",
            kind="problem",
            link=SIGN_IN,
            link_text="sign in",
        ),
        403,
    )


async def _off(request: web.Request) -> web.Response:
    return _html(render_message("The dashboard is off", OFF_MESSAGE), 404)


def add_dashboard(
    app: web.Application,
    settings: Settings,
    storage: Storage,
    *,
    tiers: Tiers = tuple,
    thresholds: CalibrationThresholds | None = None,
    clock: Clock = _utc_now,
    freshness: Freshness = DEFAULT_FRESHNESS,
    monotonic: Callable[[], float] = time.monotonic,
) -> Dashboard | None:
    """Add the dashboard's routes; they only explain how to turn it on without a token.

    `thresholds` default to `JUDGE_CALIBRATION_*` as `judge-bot calibrate` reads them.
    Returns the dashboard, or None when it is off."""
    token = settings.dashboard_token
    if token is None or not token.get_secret_value():
        for method, path in (
            ("GET", PAGE),
            ("GET", SIGN_IN),
            ("POST", SIGN_IN),
            ("POST", SIGN_OUT),
        ):
            app.router.add_route(method, path, _off)
        return None
    limits = thresholds if thresholds is not None else load_judge_section(CalibrationThresholds)
    dashboard = Dashboard(
        token.get_secret_value(),
        settings.base_url,
        storage,
        limits,
        tiers,
        clock,
        freshness,
        monotonic,
        web_url(settings.github_api_url),
    )
    app[DASHBOARD] = dashboard
    app.router.add_get(PAGE, dashboard.page)
    app.router.add_get(SIGN_IN, dashboard.sign_in_form)
    app.router.add_post(SIGN_IN, dashboard.sign_in)
    app.router.add_post(SIGN_OUT, dashboard.sign_out)

    async def warm_default_view(_: web.Application) -> None:
        # The page as people open it first is computed once storage is open (the cleanup
        # contexts start before this), so nobody waits for it.
        dashboard.views.warm(Filter(None, DEFAULT_DAYS))

    async def close_views(_: web.Application) -> None:
        await dashboard.views.close()

    app.on_startup.append(warm_default_view)
    app.on_cleanup.append(close_views)
    return dashboard
