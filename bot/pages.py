"""What every HTML page shares: the one Jinja2 environment (`bot/templates`, autoescaped)
and the judge's tiers as rows; and the status page served at `/` once the App is set up.
The registration pages (setup mode) are `registration/pages.py`; the dashboard's are
`dashboard/render.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape

from bot.judge.engine.tier_status import TierStatus
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
