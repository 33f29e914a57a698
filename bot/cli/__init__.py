"""The `judge-bot` command (`bot.cli:main`, also `python -m bot` and `python -m bot.cli`).

    __init__    the parser, and `serve`: runs the App
    judge       `judge`, `pre-push`, `install-hook`, `verdicts export`
    pre_push    what the pre-push hook reads from git and decides
    judged_change  a change judged in the parts its judges read whole (judge, pre-push)
    deliveries  `deliveries list|retry`
    replay      `replay`: a stored or saved payload sent to a running App, signed
    reports     `triage`, `calibrate`
    doctor      `doctor`: each configured judge called once, what works and what not
    eval        `eval`: the judges measured on labelled changes (bot.evaluation)
    action      `action`, `action import`: the gate as a GitHub Action step (bot.action)
    database    opening the database for a command, and its one-line failures
    arguments   the argparse types of flags several commands take (--limit, --repo)
    terminal    output that survives a closed stdout
    __main__    `python -m bot.cli`, as the console script runs it

Settings come from `bot.settings`' one loader for every command, so `serve` and the judge
commands read the same environment, the same `.env` and the same database. A closed
stdout ends any command quietly (`bot.cli.terminal.guard_closed_stdout`).

`serve` takes its address before it says it listens: a busy port is one line and exit 2.
It bounds how long a client may hold a connection (`bot.settings.server`): aiohttp's
keep-alive timeout closes a connection that goes that long without a complete request head
(idle, or trickling its headers; aiohttp 3.14.5 starts that timer when a connection opens),
and `body_deadline` answers 408 to a body that is not all in within its timeout, which
aiohttp has no setting for. Request bodies are never inflated: nothing judge-bot serves
reads a compressed one, and inflating is how a few kilobytes become gigabytes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
from collections.abc import Sequence

from aiohttp import StreamReader, web
from aiohttp.typedefs import Handler, Middleware

from bot import __version__
from bot.cli import action as action_command
from bot.cli import deliveries, doctor, judge, replay, reports
from bot.cli import eval as eval_command
from bot.cli.terminal import guard_closed_stdout
from bot.judge.settings import JudgeSettings
from bot.logs import configure_logging
from bot.settings import (
    Settings,
    SettingsError,
    load_judge_section,
    load_judge_settings,
    load_settings,
)
from bot.settings.features import FeatureSettings, load_feature_settings
from bot.settings.server import ServerSettings
from bot.storage.base import StorageUnavailable, describe_database

log = logging.getLogger("bot")

SETUP_HINT = (
    'APP_ID is not set: open %s and press "Register the GitHub App" '
    "(docs/registration.md); set BASE_URL, or WEBHOOK_PROXY_URL, first so GitHub can reach "
    "this server"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-bot", description="Four-eyes LLM quality gate for GitHub."
    )
    parser.add_argument("--version", action="version", version=f"judge-bot {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the GitHub App web server",
        description="Run the GitHub App. Settings: the environment, then .env "
        "(docs/configuration.md); without APP_ID, the registration guide only.",
    )
    serve.set_defaults(handler=_serve)
    judge.register(commands)
    deliveries.register(commands)
    replay.register(commands)
    reports.register(commands)
    doctor.register(commands)
    eval_command.register(commands)
    action_command.register(commands)
    return parser


def browse_url(host: str, port: int) -> str:
    """A URL a person can open for a server bound to `host`: bound to every address, it is
    this machine's (http://0.0.0.0/ is no address to browse to)."""
    name = "localhost" if host in ("", "0.0.0.0", "::", "[::]") else host
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"  # an IPv6 address
    return f"http://{name}:{port}/"


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets listening on every address `host` names, bound as aiohttp would bind them
    (address reuse; IPv6 sockets for IPv6 only). OSError when any address cannot be had."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            # Listening now, not once the app has started: a second server on the port is
            # refused here rather than after its start-up.
            sock.listen(128)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _start_log(settings: Settings, judge_settings: JudgeSettings, port: int) -> None:
    url = browse_url(settings.host, port)
    if not settings.configured:
        log.warning(SETUP_HINT, url)
    log.info("judge tiers: %s", judge_settings.describe_tiers())
    log.info(
        "judge-bot %s listening on %s, open %s; database %s",
        __version__,
        _address(settings.host, port),
        url,
        describe_database(settings.database_url),
    )


def _address(host: str, port: int) -> str:
    shown = host or "*"
    return f"[{shown}]:{port}" if ":" in shown and not shown.startswith("[") else f"{shown}:{port}"


class BodyTimedOut(TimeoutError):
    """A request's body did not all arrive within its time. A TimeoutError, so that aiohttp,
    discarding the rest of the body after the answer, stops quietly when it meets it."""


def body_deadline(seconds: float) -> Middleware:
    """Answers 408, and closes the connection, when a request's body is not all in `seconds`
    after its head. The handler is not cancelled: only its reads of the body fail, so
    nothing it does once it has the body (a delivery half stored) is cut short."""

    @web.middleware
    async def deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
        body = request.content
        if body.is_eof():  # no body, or all of it in already
            return await handler(request)
        timer = asyncio.get_running_loop().call_later(seconds, _expire, body)
        try:
            return await handler(request)
        except BodyTimedOut:
            log.warning(
                "request body not received within %g s (JUDGE_BODY_TIMEOUT_SECONDS): answered 408",
                seconds,
            )
            response = web.json_response(
                {"ok": False, "error": f"request body not received within {seconds:g} s"},
                status=408,
            )
            response.force_close()
            return response
        finally:
            timer.cancel()

    return deadline


def _expire(body: StreamReader) -> None:
    if not body.is_eof():
        body.set_exception(BodyTimedOut())


def _serve(args: argparse.Namespace) -> int:
    del args
    try:
        settings = load_settings()
        judge_settings = load_judge_settings()
        features = load_feature_settings()
        server = load_judge_section(ServerSettings)
    except SettingsError as exc:
        sys.stderr.write(f"judge-bot: configuration error: {exc}\n")
        return 2
    configure_logging(
        settings.log_level,
        settings.log_format,
        settings.secret_values() + judge_settings.api_keys() + features.secret_values(),
        level_in_string=settings.log_level_in_string,
        message_key=settings.log_message_key,
    )
    try:
        sockets = listening_sockets(settings.host, settings.port)
    except OSError as exc:
        where = _address(settings.host, settings.port)
        sys.stderr.write(
            f"judge-bot: cannot listen on {where} (HOST, PORT): {exc.strerror or exc}\n"
        )
        return 2
    try:
        _start_log(settings, judge_settings, sockets[0].getsockname()[1])
        return _run(settings, judge_settings, features, server, sockets)
    finally:
        for sock in sockets:
            sock.close()


def _run(
    settings: Settings,
    judge_settings: JudgeSettings,
    features: FeatureSettings,
    server: ServerSettings,
    sockets: list[socket.socket],
) -> int:
    # Imported here: the app (dashboard, every feature) takes most of a second to import,
    # which every other command, the hook and the Action would pay at each start.
    from bot.app import create_app

    app = create_app(settings, judge_settings=judge_settings, features=features)
    # Innermost: the 408 is answered before any other middleware meets the timeout (an
    # OSError, as every TimeoutError is).
    app.middlewares.append(body_deadline(server.body_timeout_seconds))
    try:
        web.run_app(
            app,
            sock=sockets,
            print=None,
            keepalive_timeout=server.keepalive_timeout_seconds,
            # Passed on to aiohttp's request handler (module docstring).
            auto_decompress=False,
        )
    except StorageUnavailable as exc:
        where = describe_database(settings.database_url)
        sys.stderr.write(f"judge-bot: cannot open the database {where} (DATABASE_URL): {exc}\n")
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    def command() -> int:
        parser = build_parser()
        args = parser.parse_args(argv)
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return 2
        result: int = handler(args)
        return result

    return guard_closed_stdout(command)
