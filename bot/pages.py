"""HTML pages served at `/`: the registration guide (setup mode) and a small status page."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape

from bot.settings import Settings
from bot.storage.base import DeliveryStatus


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("bot", "templates"),
        autoescape=select_autoescape(["html"]),
        keep_trailing_newline=True,
    )


def render_setup_page(settings: Settings) -> str:
    return (
        _environment()
        .get_template("setup.html")
        .render(
            webhook_path=settings.webhook_path,
            port=settings.port,
            api_url=settings.github_api_url,
        )
    )


def render_status_page(
    settings: Settings, counts: Mapping[DeliveryStatus, int], version: str
) -> str:
    return (
        _environment()
        .get_template("status.html")
        .render(
            app_id=settings.app_id,
            webhook_path=settings.webhook_path,
            counts={status.value: counts.get(status, 0) for status in DeliveryStatus},
            version=version,
        )
    )
