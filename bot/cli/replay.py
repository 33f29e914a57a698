"""`judge-bot replay`: send a saved webhook payload to a running server, signed as GitHub signs.

    judge-bot replay PAYLOAD.json --event pull_request [--url URL] [--delivery-id ID]

The file's bytes are sent as they are, with `X-Hub-Signature-256` over them from
WEBHOOK_SECRET, `X-GitHub-Event`, and `X-GitHub-Delivery` (a fresh id unless given: the same
id twice is a redelivery, which intake answers 200 duplicate). Settings come from the one
loader (`load_settings`): WEBHOOK_SECRET, and HOST, PORT and WEBHOOK_PATH for the default URL.
A URL on another machine is reached through the proxy `HTTPS_PROXY` / `HTTP_PROXY` name,
unless `NO_PROXY` names its host (`bot.intake.proxy.outbound_proxy`); this machine's never.

Exit status: 0 intake accepted it (2xx), 1 it refused (the status and its answer are
printed), 2 a usage or settings problem, 3 nothing answered at the URL.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from bot import __version__
from bot.cli.terminal import err, out
from bot.intake.proxy import (
    ProxySettingError,
    local_webhook_url,
    outbound_proxy,
    proxy_address,
)
from bot.settings import SettingsError, load_settings
from bot.storage.base import MAX_BODY_BYTES

TIMEOUT_SECONDS = 30.0


class _Usage(Exception):
    """A problem with the command line or the settings; the message is the line to print."""


def signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def replay_headers(event: str, delivery_id: str, body: bytes, secret: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": f"judge-bot-replay/{__version__}",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": signature(body, secret),
    }


def _read_payload(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_BODY_BYTES:
            raise _Usage(f"{path}: over GitHub's 25 MB payload limit")
        return path.read_bytes()
    except OSError as exc:
        raise _Usage(f"cannot read {path}: {exc.strerror or exc}") from None


def _target(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """(URL, the proxy to reach it through, secret) from the command line, the settings and
    the proxy variables."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise _Usage(f"configuration error: {exc}") from None
    if settings.webhook_secret is None or not settings.webhook_secret.get_secret_value():
        raise _Usage("WEBHOOK_SECRET is not set: replay signs with the server's secret")
    url: str = args.url or local_webhook_url(settings.host, settings.port, settings.webhook_path)
    if not url.startswith(("http://", "https://")):
        raise _Usage(f"--url must be an http(s) URL, not {url!r}")
    try:
        proxy = outbound_proxy(url, os.environ)
    except ProxySettingError as exc:
        raise _Usage(str(exc)) from None
    return url, proxy, settings.webhook_secret.get_secret_value()


async def _send(
    url: str, proxy: str | None, body: bytes, headers: dict[str, str]
) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=body, headers=headers, proxy=proxy) as response,
    ):
        return response.status, await response.text(errors="replace")


def _cmd_replay(args: argparse.Namespace) -> int:
    try:
        url, proxy, secret = _target(args)
        body = _read_payload(Path(args.payload))
    except _Usage as exc:
        err(f"judge-bot: {exc}")
        return 2
    delivery_id = args.delivery_id or str(uuid.uuid4())
    headers = replay_headers(args.event, delivery_id, body, secret)
    try:
        status, answer = asyncio.run(_send(url, proxy, body, headers))
    except aiohttp.InvalidURL:
        err(f"judge-bot: --url is not a usable URL: {url!r}")
        return 2
    except (aiohttp.ClientError, TimeoutError) as exc:
        through = f" through the proxy {proxy_address(proxy)}" if proxy else ""
        err(
            f"judge-bot: nothing answered at {url}{through} ({type(exc).__name__}): is "
            "`judge-bot serve` running? The default URL comes from HOST, PORT and WEBHOOK_PATH; "
            "--url names another"
        )
        return 3
    out(f"{args.event} delivery {delivery_id}: HTTP {status}")
    if answer.strip():
        out(answer.strip())
    return 0 if 200 <= status < 300 else 1


def register(subparsers: Any) -> None:
    """Add `replay` to an argparse subparsers object."""
    replay = subparsers.add_parser(
        "replay",
        help="send a saved webhook payload to a running server, signed",
        description="Send PAYLOAD.json to the server's webhook path as GitHub would: signed "
        "with WEBHOOK_SECRET, with X-GitHub-Event and a new X-GitHub-Delivery. Exit status: 0 "
        "accepted, 1 refused, 2 usage or settings error, 3 no server answered.",
    )
    replay.add_argument("payload", metavar="PAYLOAD.json", help="the payload file, sent as is")
    replay.add_argument(
        "--event", required=True, help="the X-GitHub-Event name, e.g. pull_request or push"
    )
    replay.add_argument(
        "--url",
        help="where to send it (default: http://HOST:PORT/WEBHOOK_PATH from the settings, "
        "127.0.0.1 for a server listening on every address)",
    )
    replay.add_argument(
        "--delivery-id",
        help="the X-GitHub-Delivery id (default: a new one; a stored id is a redelivery)",
    )
    replay.set_defaults(handler=_cmd_replay)
