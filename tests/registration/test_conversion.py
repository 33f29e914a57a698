"""The code exchanged for the App: GitHub's failures become plain explanations."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.registration.conversion import ConversionError, RegisteredApp, convert_code, plausible_code


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def odd_github() -> AsyncIterator[str]:
    """A server answering what GitHub's description does not allow, which the fake never
    sends: a 201 without credentials, a 500 with an HTML body."""

    async def answer(request: web.Request) -> web.Response:
        if request.match_info["code"] == "empty":
            return web.json_response({"id": 1}, status=201)
        return web.Response(status=500, text="<html>oops</html>", content_type="text/html")

    app = web.Application()
    app.router.add_post("/app-manifests/{code}/conversions", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("code", "plausible"),
    [("a1B2_c-3", True), ("", False), (None, False), ("../x", False), ("a" * 129, False)],
)
def test_plausible_code(code: str | None, plausible: bool) -> None:
    assert plausible_code(code) is plausible


async def test_an_answer_without_credentials_is_refused(
    session: aiohttp.ClientSession, odd_github: str
) -> None:
    with pytest.raises(ConversionError, match="did not hold the App's credentials"):
        await convert_code(session, odd_github, "empty")


async def test_an_error_without_a_message_is_still_explained(
    session: aiohttp.ClientSession, odd_github: str
) -> None:
    with pytest.raises(ConversionError, match="GitHub answered 500: no explanation"):
        await convert_code(session, odd_github, "broken")


async def test_an_unreachable_github_is_named(session: aiohttp.ClientSession) -> None:
    api = f"http://127.0.0.1:{unused_port()}"
    with pytest.raises(ConversionError, match="could not be reached") as caught:
        await convert_code(session, api, "c0de")
    assert not caught.value.unknown_code


def test_credentials_leave_out_what_github_did_not_send() -> None:
    app = RegisteredApp(
        id=7,
        slug="judge",
        name="judge",
        html_url="https://github.com/apps/judge",
        pem=SecretStr("PEM"),
        webhook_secret=None,
        client_id="Iv1.7",
        client_secret=SecretStr("cs"),
    )
    assert app.credentials() == {
        "APP_ID": "7",
        "PRIVATE_KEY": "PEM",
        "GITHUB_CLIENT_ID": "Iv1.7",
        "GITHUB_CLIENT_SECRET": "cs",
    }
    assert "PEM" not in repr(app) and "cs'" not in repr(app)
