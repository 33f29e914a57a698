"""HTML pages served at `/`: the registration page (setup mode) and the status page, each
with the judge's tiers; and the pages of the registration callback. Jinja2, autoescaped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape

from bot.judge.tier_status import TierStatus
from bot.registration.addresses import Addresses
from bot.registration.env_file import Saved
from bot.settings import Settings
from bot.storage.base import DeliveryStatus


@cache
def environment() -> Environment:
    """The one template environment of every page (`bot/templates`, autoescaped)."""
    return Environment(
        loader=PackageLoader("bot", "templates"),
        autoescape=select_autoescape(["html"]),
        keep_trailing_newline=True,
    )


@dataclass(frozen=True)
class TierRow:
    tier: str
    model: str
    provider: str
    host: str
    available: str
    problem: str
    settings: tuple[str, ...]


def tier_rows(statuses: Iterable[TierStatus]) -> list[TierRow]:
    """One row a tier, in words: a dash for what is not known."""
    rows: list[TierRow] = []
    for status in statuses:
        if not status.configured:
            available = "not configured"
        elif status.available is None:
            available = "not checked yet"
        else:
            available = "yes" if status.available else "no"
        rows.append(
            TierRow(
                status.tier,
                status.model or "-",
                status.provider or "-",
                status.host or "-",
                available,
                status.problem or "",
                status.settings,
            )
        )
    return rows


@dataclass(frozen=True)
class RegistrationForm:
    """What the setup page's button sends to GitHub."""

    action: str
    manifest_json: str
    org: str | None
    addresses: Addresses


@dataclass(frozen=True)
class Registered:
    """An App this process registered, shown on `/` until the restart."""

    name: str
    html_url: str
    install_url: str
    saved: Saved


def render_setup_page(
    settings: Settings,
    *,
    form: RegistrationForm | None,
    manifest_problem: str | None,
    tiers: Sequence[TierStatus],
    registered: Registered | None,
) -> str:
    return (
        environment()
        .get_template("setup.html")
        .render(
            form=form,
            manifest_problem=manifest_problem,
            registered=registered,
            webhook_path=settings.webhook_path,
            api_url=settings.github_api_url,
            tiers=tier_rows(tiers),
        )
    )


def render_registered_page(registered: Registered, overridden: Sequence[str]) -> str:
    return (
        environment()
        .get_template("registered.html")
        .render(registered=registered, saved=registered.saved, overridden=overridden)
    )


def render_problem_page(title: str, message: str) -> str:
    return environment().get_template("problem.html").render(title=title, message=message)


def render_status_page(
    settings: Settings,
    counts: Mapping[DeliveryStatus, int],
    version: str,
    tiers: Sequence[TierStatus] = (),
) -> str:
    return (
        environment()
        .get_template("status.html")
        .render(
            app_id=settings.app_id,
            webhook_path=settings.webhook_path,
            counts={status.value: counts.get(status, 0) for status in DeliveryStatus},
            version=version,
            tiers=tier_rows(tiers),
        )
    )
