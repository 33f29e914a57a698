"""The web server's own `JUDGE_*` settings: how long a client may take to send a request,
and how long an idle connection stays open (docs/deploy.md, "Timeouts and limits").

Loaded by `serve` with `bot.settings.load_judge_section(ServerSettings)`, like each feature's
own section, so a bad value stops it at start with one line naming the variable.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ServerSettings"]


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    keepalive_timeout_seconds: float = Field(
        default=75.0,
        gt=0,
        le=3600,
        description="How long a connection may go without a complete request head: idle "
        "between requests, or sending its headers. Keep it above the idle timeout of any "
        "load balancer in front (60 s on most), or the balancer may reuse a connection the "
        "server is closing.",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How long a request's body may take to arrive once its headers are in; "
        "a slower one is answered 408 and its connection closed. GitHub gives up on a "
        "delivery after 10 s.",
    )
