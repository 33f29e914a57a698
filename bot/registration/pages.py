"""The registration pages: the setup page served at `/` in setup mode (with the judge's
tiers), and the pages of the registration callback. Jinja2, autoescaped (`bot.pages`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.engine.tier_status import TierStatus
from bot.pages import environment, tier_rows
from bot.registration.addresses import Addresses
from bot.registration.env_file import Saved
from bot.settings import Settings


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
