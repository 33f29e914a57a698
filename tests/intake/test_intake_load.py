"""The webhook handler counts each request in the workers' `IntakeLoad` while it answers
it, whatever the answer, so the workers give way to it (test_intake_give_way.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.intake.webhooks import make_webhook_handler
from bot.intake.worker import IntakeLoad
from bot.metrics import Metrics
from bot.storage.base import Storage
from tests.support.webhook_helpers import SECRET, example, sign, webhook_headers

PATH = "/api/github/webhooks"


@asynccontextmanager
async def intake_client(
    storage: Storage, load: IntakeLoad, seen: list[int]
) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    def wake() -> None:
        # Called while the request that stored a delivery is still being answered.
        seen.append(load.answering)

    app = web.Application()
    app.router.add_post(PATH, make_webhook_handler(storage, SECRET, Metrics(), wake, intake=load))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield client


async def test_a_stored_delivery_is_counted_until_it_is_answered(storage: Storage) -> None:
    load = IntakeLoad()
    seen: list[int] = []
    body = example("push", "payload")
    async with intake_client(storage, load, seen) as client:
        response = await client.post(PATH, data=body, headers=webhook_headers("push", body))
        assert response.status == 202
        assert seen == [1]
        assert load.answering == 0


async def test_a_refused_request_is_no_longer_counted_once_answered(storage: Storage) -> None:
    load = IntakeLoad()
    seen: list[int] = []
    body = example("push", "payload")
    headers = webhook_headers("push", body) | {"X-Hub-Signature-256": sign(body, "other")}
    async with intake_client(storage, load, seen) as client:
        assert (await client.post(PATH, data=body, headers=headers)).status == 401
        assert (
            await client.post(PATH, data=b"{", headers=webhook_headers("push", b"{"))
        ).status == 400
        assert seen == []
        assert load.answering == 0


async def test_a_body_still_arriving_is_not_counted(storage: Storage) -> None:
    """Reading the body waits on the sender, who may be anyone (the signature is checked on
    the whole body): trickling one in must not hold the workers back."""
    load = IntakeLoad()
    started = asyncio.Event()
    handler = make_webhook_handler(storage, SECRET, Metrics(), lambda: None, intake=load)

    async def entered(request: web.Request) -> web.StreamResponse:
        started.set()
        response: web.StreamResponse = await handler(request)
        return response

    app = web.Application()
    app.router.add_post(PATH, entered)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    body = example("push", "payload")
    head = "".join(f"{name}: {value}\r\n" for name, value in webhook_headers("push", body).items())
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        request_line = f"POST {PATH} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n"
        writer.write(f"{request_line}{head}\r\n".encode() + body[:100])
        await writer.drain()
        async with asyncio.timeout(10):
            await started.wait()
        for _ in range(20):
            await asyncio.sleep(0)
        assert load.answering == 0
        writer.write(body[100:])
        await writer.drain()
        status = await reader.readline()
        assert status.split()[1] == b"202"
        assert load.answering == 0
    finally:
        writer.close()
        await server.close()
