"""What every HTML page shares: the one Jinja2 environment (`bot/templates`, autoescaped)
and the judge's tiers as rows; and the status page served at `/` once the App is set up.
The registration pages (setup mode) are `registration/pages.py`; the dashboard's are
`dashboard/render.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape

from bot.github.client import GitHubHealth
from bot.github.web import web_url
from bot.judge.doctor.background import ProbeBoard
from bot.judge.doctor.report import PROBE_COLUMNS
from bot.judge.engine.tier_status import TierStatus
from bot.link_health import LinkHealth
from bot.services import StorageWrites
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
class LinkRow:
    """One thing the App depends on (GitHub, writing to storage), as the status page says it."""

    name: str
    state: str
    last_success: str
    failing_since: str
    last_error: str


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def link_rows(github: GitHubHealth | None, writes: StorageWrites | None) -> list[LinkRow]:
    """GitHub's state and the storage writes', in words: a dash for what is not known."""
    named: list[tuple[str, LinkHealth]] = []
    if github is not None:
        named.append((f"GitHub ({github.host})" if github.host else "GitHub", github))
    if writes is not None:
        named.append(("storage writes", writes))
    return [
        LinkRow(
            name,
            link.state() if link is github else ("failing" if link.failing else "ok"),
            _when(link.last_success),
            _when(link.failing_since),
            (link.last_error or "") if link.failing else "",
        )
        for name, link in named
    ]


def render_status_page(
    settings: Settings,
    counts: Mapping[DeliveryStatus, int],
    version: str,
    tiers: Sequence[TierStatus] = (),
    *,
    github: GitHubHealth | None = None,
    writes: StorageWrites | None = None,
    probe: ProbeBoard | None = None,
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
            links=link_rows(github, writes),
            dashboard=settings.dashboard_token is not None,
            github_web=web_url(settings.github_api_url),
            probe_columns=PROBE_COLUMNS,
            probe=probe,
        )
    )
