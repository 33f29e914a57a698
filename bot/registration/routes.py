"""The setup-mode routes: `/` (the registration page) and the callback GitHub returns to.

GET /                -> the form that posts app.yml (with this server's addresses) to GitHub
GET /setup/callback  -> state checked, code converted, credentials saved, "install the App"

Only a process without `APP_ID` serves them (`add_registration`): once configured, `/` is
the status page and the callback does not exist.

GitHub is called once, for the code's conversion, through the outbound proxy the standard
variables name (`HTTPS_PROXY`, `NO_PROXY`: `bot.intake.proxy.outbound_proxy`). GitHub has
created the App by the time the callback runs, so no failure there advises starting again
(that registers a second App): an unreachable GitHub is retried with the same code
(`conversion_problem`), and any other failure points at the App on GitHub.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.intake.proxy import ProxySettingError, outbound_proxy
from bot.judge.engine.tier_status import TierBoard
from bot.registration.addresses import (
    CALLBACK_PATH,
    addresses_for,
    apps_settings_url,
    install_url,
    new_app_url,
)
from bot.registration.conversion import ConversionError, RegisteredApp, convert_code, plausible_code
from bot.registration.env_file import (
    SaveError,
    choose_target,
    overridden_by_environment,
    save_credentials,
)
from bot.registration.manifest import ManifestError, find_manifest, load_manifest
from bot.registration.pages import (
    Registered,
    RegistrationForm,
    render_problem_page,
    render_registered_page,
    render_setup_page,
)
from bot.registration.state_token import StateCheck, StateSigner
from bot.settings import Settings

__all__ = ["REGISTRATION", "Registration", "add_registration", "conversion_problem"]

log = logging.getLogger(__name__)

_REFUSED_STATE = {
    StateCheck.MISSING: "GitHub's answer carried no state value.",
    StateCheck.MALFORMED: "The state value is not one judge-bot issues.",
    StateCheck.FORGED: "The state value was not issued by this judge-bot process (it restarted "
    "since the form was shown, or the link did not come from its form).",
    StateCheck.EXPIRED: "The registration form is more than an hour old.",
}
_BY_HAND = "generate a private key, then set APP_ID, PRIVATE_KEY_PATH and WEBHOOK_SECRET"


@dataclass(frozen=True)
class Problem:
    status: int
    title: str
    message: str


def conversion_problem(exc: ConversionError, apps_url: str) -> Problem:
    """What the person reads when the code was not converted. GitHub created the App before
    sending them back: retry the same code when that can work, never start again blindly."""
    if exc.retryable:
        return Problem(
            502,
            "GitHub did not hand over the App yet",
            f"{exc} GitHub has already created the App, and its code stays valid for an "
            "hour: retry by reloading this page once GitHub answers. Starting again would "
            "register a second App. A restart of judge-bot voids this page: if judge-bot "
            "needs one to reach GitHub (a proxy or certificate setting), finish the App by "
            f"hand on {apps_url} instead ({_BY_HAND}).",
        )
    return Problem(
        400 if exc.unknown_code else 502,
        "GitHub did not hand over the App",
        f"{exc} {_created_already(apps_url)}",
    )


def _created_already(apps_url: str) -> str:
    return (
        f"GitHub created the App before sending you here: it is listed on {apps_url}. Finish "
        f"it by hand there ({_BY_HAND}), or delete it there and start again."
    )


@dataclass
class Registration:
    """Setup mode's state: the state key, GitHub's client, and what was registered."""

    settings: Settings
    board: TierBoard
    clock: Callable[[], datetime]
    signer: StateSigner = field(default_factory=StateSigner)
    cwd: Callable[[], Path] = Path.cwd
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    session: aiohttp.ClientSession | None = None
    # Code -> what it registered: a reloaded callback shows the result again.
    completed: dict[str, Registered] = field(default_factory=dict)
    last: Registered | None = None


REGISTRATION = web.AppKey("registration", Registration)


def add_registration(app: web.Application, registration: Registration) -> None:
    app[REGISTRATION] = registration
    app.cleanup_ctx.append(_session_ctx)
    app.router.add_get("/", setup_page)
    app.router.add_get(CALLBACK_PATH, callback)


async def _session_ctx(app: web.Application) -> AsyncIterator[None]:
    """GitHub's client for the one conversion; only setup mode has one (and needs it)."""
    registration = app[REGISTRATION]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        registration.session = session
        yield
        registration.session = None


def _origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


async def setup_page(request: web.Request) -> web.Response:
    registration = request.app[REGISTRATION]
    settings = registration.settings
    form: RegistrationForm | None = None
    problem: str | None = None
    try:
        manifest = load_manifest(find_manifest(registration.cwd()))
    except ManifestError as exc:
        problem = str(exc)
    else:
        addresses = addresses_for(
            base_url=settings.base_url,
            webhook_proxy_url=settings.webhook_proxy_url,
            webhook_path=settings.webhook_path,
            request_origin=_origin(request),
        )
        try:
            outbound_proxy(settings.github_api_url, registration.environ)
        except ProxySettingError as exc:
            # Said before GitHub creates the App: fixing it afterwards takes a restart,
            # which voids the callback's state.
            warning = f"{exc}. Fix it and restart judge-bot before registering."
            addresses = replace(addresses, warnings=(*addresses.warnings, warning))
        state = registration.signer.issue(registration.clock())
        form = RegistrationForm(
            action=new_app_url(settings.github_api_url, settings.gh_org, state),
            manifest_json=json.dumps(manifest.to_send(addresses)),
            org=settings.gh_org,
            addresses=addresses,
        )
    html = render_setup_page(
        settings,
        form=form,
        manifest_problem=problem,
        tiers=registration.board.current(),
        registered=registration.last,
    )
    return _html(html, headers={"Cache-Control": "no-store"})


async def callback(request: web.Request) -> web.Response:
    registration = request.app[REGISTRATION]
    settings = registration.settings
    apps_url = apps_settings_url(settings.github_api_url, settings.gh_org)
    check = registration.signer.verify(request.query.get("state"), registration.clock())
    if check is not StateCheck.VALID:
        log.warning("registration callback refused: state %s", check.value)
        advice = _created_already(apps_url) if "code" in request.query else "Start again."
        return _problem(403, "Registration refused", f"{_REFUSED_STATE[check]} {advice}")
    code = request.query.get("code")
    if not plausible_code(code) or code is None:
        return _problem(400, "Registration refused", "GitHub's answer carried no usable code.")
    done = registration.completed.get(code)
    if done is not None:
        return _html(render_registered_page(done, ()))
    session = registration.session
    if session is None:  # the app is shutting down
        return _problem(503, "Try again", "judge-bot is stopping.")
    try:
        proxy = outbound_proxy(settings.github_api_url, registration.environ)
        app = await convert_code(session, settings.github_api_url, code, proxy=proxy)
    except ProxySettingError as exc:
        log.error("registration: GitHub not called: %s", exc)
        return _problem(
            500, "judge-bot cannot reach GitHub", f"{exc}. {_created_already(apps_url)}"
        )
    except ConversionError as exc:
        log.warning("registration: conversion failed: %s", exc)
        problem = conversion_problem(exc, apps_url)
        return _problem(problem.status, problem.title, problem.message)
    return _save(registration, code, app)


def _save(registration: Registration, code: str, app: RegisteredApp) -> web.Response:
    cwd = registration.cwd()
    values = app.credentials()
    try:
        saved = save_credentials(
            values,
            choose_target(cwd, registration.environ),
            cwd,
            separate_name=f".env.{app.slug}-{app.id}",
            header=f"The GitHub App {app.slug}, registered by judge-bot from app.yml",
        )
    except SaveError as exc:
        log.error(
            "registration: App %s (id %d) created, settings not saved: %s", app.slug, app.id, exc
        )
        return _problem(
            503,
            "The App was created, but its settings could not be saved",
            f"{exc}. On GitHub ({app.html_url}) generate a private key and set a webhook "
            "secret, then set APP_ID, PRIVATE_KEY_PATH and WEBHOOK_SECRET by hand.",
        )
    registered = Registered(app.name, app.html_url, install_url(app.html_url), saved)
    registration.completed[code] = registered
    registration.last = registered
    log.info(
        "registered the GitHub App %s (id %d); its settings are in %s (%s)",
        app.slug,
        app.id,
        saved.path,
        ", ".join(saved.added),
    )
    overridden = overridden_by_environment(tuple(values), registration.environ)
    return _html(render_registered_page(registered, overridden))


def _html(
    text: str, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", headers=headers)


def _problem(status: int, title: str, message: str) -> web.Response:
    return _html(render_problem_page(title, message), status=status)
