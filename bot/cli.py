"""The `judge-bot` command: `serve` runs the App; the judge commands come from bot.judge.console."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from aiohttp import web

from bot import __version__
from bot.app import create_app
from bot.judge import console as judge_console
from bot.logs import configure_logging
from bot.settings import SettingsError, load_judge_config, load_settings
from bot.storage.base import StorageUnavailable, describe_database

log = logging.getLogger("bot")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-bot", description="Four-eyes LLM quality gate for GitHub."
    )
    parser.add_argument("--version", action="version", version=f"judge-bot {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the GitHub App web server")
    serve.set_defaults(handler=_serve)
    judge_console.register(commands)
    return parser


def _serve(args: argparse.Namespace) -> int:
    del args
    try:
        settings = load_settings()
        judge_config = load_judge_config()
    except SettingsError as exc:
        sys.stderr.write(f"judge-bot: configuration error: {exc}\n")
        return 2
    secrets = [
        value.get_secret_value()
        for value in (settings.webhook_secret, settings.private_key)
        if value is not None
    ] + judge_config.api_keys()
    configure_logging(settings.log_level, settings.log_format, secrets)
    if not settings.configured:
        log.warning(
            "APP_ID is not set: serving the registration guide at http://%s:%d/ "
            "(register the App from app.yml, then set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET)",
            settings.host,
            settings.port,
        )
    log.info("judge-bot %s listening on %s:%d", __version__, settings.host, settings.port)
    try:
        web.run_app(
            create_app(settings, judge_config=judge_config),
            host=settings.host,
            port=settings.port,
            print=None,
        )
    except StorageUnavailable as exc:
        where = describe_database(settings.database_url)
        sys.stderr.write(f"judge-bot: cannot open the database {where} (DATABASE_URL): {exc}\n")
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    result: int = handler(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
