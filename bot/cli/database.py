"""Running an operator's command against the App's database: one way to find it, open
it, close it and report a failure, for `deliveries`, `triage` and `calibrate`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.cli.terminal import err
from bot.settings import DATABASE_FILE, SettingsError, load_database_url
from bot.storage import storage_from_url
from bot.storage.base import Storage, describe_database

__all__ = [
    "DATABASE_HELP",
    "CommandRefused",
    "database_failure",
    "run_on_database",
    "with_storage",
]

logger = logging.getLogger(__name__)

# The `--database-url` help of every command that opens the App's database.
DATABASE_HELP = (
    "the App's database (default: DATABASE_URL from the environment or .env, else "
    f"{DATABASE_FILE} at the top of this git work tree, else in this directory)"
)

T = TypeVar("T")


class CommandRefused(Exception):
    """The command cannot do what was asked; the message is the line to print (exit 2)."""


async def with_storage(url: str, work: Callable[[Storage], Awaitable[T]]) -> T:
    storage = storage_from_url(url)
    await storage.open()
    try:
        return await work(storage)
    finally:
        await storage.close()


def database_failure(url: str, exc: BaseException) -> str:
    """The line for a database that failed. A driver's message may quote a DSN, so only
    its type is shown, except for errors known to name the problem, never the URL."""
    what = type(exc).__name__
    if isinstance(exc, OSError | sqlite3.Error | ValueError):
        what += f": {exc}"
    return f"judge-bot: cannot read the database {describe_database(url)} ({what})"


def run_on_database(args: argparse.Namespace, work: Callable[[Storage], Awaitable[T]]) -> T | int:
    """`work` against `--database-url` or the default database; an int is the exit
    status of a failure already reported on stderr."""
    try:
        url: str = args.database_url or load_database_url()
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}")
        return 2
    try:
        return asyncio.run(with_storage(url, work))
    except CommandRefused as exc:
        err(f"judge-bot: {exc}")
        return 2
    except Exception as exc:  # reported as one line; the traceback goes to the debug log
        logger.debug("%s failed", getattr(args, "command", "command"), exc_info=True)
        err(database_failure(url, exc))
        return 2
