"""The dashboard's pages, Jinja2 with autoescaping: every stored string (judge text,
repository names, links) is escaped, and links are http(s) only (`view.web_link`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.dashboard.chart import KINDS
from bot.dashboard.filters import day_choices
from bot.dashboard.view import DashboardView
from bot.pages import TierRow, environment
from bot.reports.triage_view import when


def age_text(seconds: float) -> str:
    """How old the figures are, in words."""
    if seconds < 2:
        return "just now"
    if seconds < 120:
        return f"{seconds:.0f} seconds ago"
    return f"{seconds / 60:.0f} minutes ago"


@dataclass(frozen=True)
class FreshnessNote:
    """What the page says of how current its figures are."""

    as_of: datetime
    """When the verdict log was last read for them (at this request, unless it failed)."""
    read_seconds_ago: float
    """Since the whole window was last read."""
    read_every_seconds: float


def freshness_text(note: FreshnessNote) -> str:
    return (
        f"Up to date with the verdict log at {note.as_of.astimezone(UTC):%Y-%m-%d %H:%M:%S} "
        "UTC: every judgment and override recorded by then is counted. The whole window "
        f"was last read {age_text(note.read_seconds_ago)} and is read again every "
        f"{note.read_every_seconds:.0f} seconds, so a record another replica commits out "
        "of order shows within that too."
    )


def render_dashboard(
    view: DashboardView, tiers: Sequence[TierRow], freshness: FreshnessNote, signed_in: bool
) -> str:
    return (
        environment()
        .get_template("dashboard.html")
        .render(
            view=view,
            tiers=tiers,
            chart=view.chart,
            kinds=KINDS,
            days=view.filter.days,
            since=when(view.since),
            until=when(view.until),
            day_choices=day_choices(view.filter.days),
            freshness=freshness_text(freshness),
            signed_in=signed_in,
        )
    )


def render_sign_in(message: str, problem: str | None = None) -> str:
    return environment().get_template("sign_in.html").render(message=message, problem=problem)


def render_message(
    title: str, message: str, *, kind: str = "note", link: str | None = None, link_text: str = ""
) -> str:
    return (
        environment()
        .get_template("dashboard_message.html")
        .render(title=title, message=message, kind=kind, link=link, link_text=link_text)
    )
