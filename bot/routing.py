"""The one place where feature routers are composed (one router per feature module)."""

from __future__ import annotations

from gidgethub.routing import Router

from bot.features import installations


def build_router() -> Router:
    return Router(installations.router)
