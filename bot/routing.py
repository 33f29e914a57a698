"""The one place where feature routers are composed (one router per feature module)."""

from __future__ import annotations

from gidgethub.routing import Router

from bot.features import commands, installations, judging


def build_router() -> Router:
    return Router(installations.router, judging.router, commands.router)
