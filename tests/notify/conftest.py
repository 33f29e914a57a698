"""A real webhook endpoint on loopback for the notification tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

SECRET_PATH = "/services/T000/B000/hunter2-secret"


@dataclass
class Receiver:
    """A webhook endpoint that answers the statuses it is told, in order, then 200."""

    statuses: list[int] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(json.loads(await request.read()))
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text="ok")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post(SECRET_PATH, found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}{SECRET_PATH}"
    yield found
    await runner.cleanup()
