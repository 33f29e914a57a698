"""The setup-mode routes: `/` (the registration page) and the callback GitHub returns to.

GET /                -> the form that posts app.yml (with this server's addresses) to GitHub
GET /setup/callback  -> state checked, code converted, credentials saved, "install the App"

Only a process without `APP_ID` serves them (`add_registration`): once configured, `/` is
the status page and the callback does not exist.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.judge.engine.tier_status import TierBoard
from bot.registration.addresses import (
    CALLBACK_PATH,
    addresses_for,
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

__all__ = ["REGISTRATION", "Registration", "add_registration"]

log = logging.getLogger(__name__)

_REFUSED_STATE = {
    StateCheck.MISSING: "GitHub's answer carried no state value.",
    StateCheck.MALFORMED: "The state value is not one judge-bot issues.",
    StateCheck.FORGED: "The state value was not issued by this judge-bot process (it restarted "
    "since the form was shown, or the link did not come from its form).",
    StateCheck.EXPIRED: "The registration form is more than an hour old.",
}


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
    check = registration.signer.verify(request.query.get("state"), registration.clock())
    if check is not StateCheck.VALID:
        log.warning("registration callback refused: state %s", check.value)
        return _problem(403, "Registration refused", _REFUSED_STATE[check] + " Start again.")
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
        app = await convert_code(session, registration.settings.github_api_url, code)
    except ConversionError as exc:
        log.warning("registration: conversion failed: %s", exc)
        status = 400 if exc.unknown_code else 502
        return _problem(status, "GitHub did not hand over the App", f"{exc} Start again.")
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
