"""The `judge-bot` command (`bot.cli:main`, also `python -m bot` and `python -m bot.cli`).

    __init__    the parser, and `serve`: runs the App
    judge       `judge`, `pre-push`, `install-hook`, `verdicts export`
    pre_push    what the pre-push hook reads from git and decides
    deliveries  `deliveries list|retry`
    replay      `replay`: a stored or saved payload sent to a running App, signed
    reports     `triage`, `calibrate`
    database    opening the database for a command, and its one-line failures
    terminal    output that survives a closed stdout

Settings come from `bot.settings`' one loader for every command, so `serve` and the judge
commands read the same environment, the same `.env` and the same database. A closed
stdout ends any command quietly (`bot.cli.terminal.guard_closed_stdout`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from aiohttp import web

from bot import __version__
from bot.app import create_app
from bot.cli import deliveries, judge, replay, reports
from bot.cli.terminal import guard_closed_stdout
from bot.judge.config import JudgeConfig
from bot.logs import configure_logging
from bot.settings import Settings, SettingsError, load_judge_config, load_settings
from bot.settings.features import load_feature_settings
from bot.storage.base import StorageUnavailable, describe_database

log = logging.getLogger("bot")

SETUP_HINT = (
    'APP_ID is not set: open http://%s:%d/ and press "Register the GitHub App" '
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
    return parser


def _start_log(settings: Settings, judge_config: JudgeConfig) -> None:
    if not settings.configured:
        log.warning(SETUP_HINT, settings.host, settings.port)
    log.info("judge tiers: %s", judge_config.describe_tiers())
    log.info(
        "judge-bot %s listening on %s:%d, database %s",
        __version__,
        settings.host,
        settings.port,
        describe_database(settings.database_url),
    )


def _serve(args: argparse.Namespace) -> int:
    del args
    try:
        settings = load_settings()
        judge_config = load_judge_config()
        features = load_feature_settings()
    except SettingsError as exc:
        sys.stderr.write(f"judge-bot: configuration error: {exc}\n")
        return 2
    configure_logging(
        settings.log_level,
        settings.log_format,
        settings.secret_values() + judge_config.api_keys() + features.secret_values(),
        level_in_string=settings.log_level_in_string,
        message_key=settings.log_message_key,
    )
    _start_log(settings, judge_config)
    try:
        web.run_app(
            create_app(settings, judge_config=judge_config, features=features),
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
