"""The one place where feature routers are composed (one router per feature module)."""

from __future__ import annotations

from gidgethub.routing import Router

from bot.commands import handlers as commands
from bot.installations import handlers as installations
from bot.judging import handlers as judging
from bot.merging import handlers as merging


def build_router() -> Router:
    return Router(installations.router, judging.router, commands.router, merging.router)
