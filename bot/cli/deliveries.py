"""Operators' delivery commands for the `judge-bot` CLI.

    judge-bot deliveries list [--failed] [--limit N] [--database-url URL]
    judge-bot deliveries retry (ID | --all-failed) [--database-url URL]

`retry` re-queues through `Storage.requeue_failed`, the same conditional update GitHub's
"Redeliver" uses, so a delivery a worker holds or has finished is never queued again, and
a running server's workers pick the re-queued ones up at their next poll. The database is
found as the judge's commands find it (`--database-url`, else DATABASE_URL, else the
default file). Exit status 2, one line on stderr, for an unknown id, a delivery that is
not failed, a bad DATABASE_URL or a database that cannot be read.
"""

from __future__ import annotations

import argparse
import logging
from datetime import UTC, datetime
from typing import Any, TypeVar

from bot.cli.database import CommandRefused, run_on_database
from bot.cli.terminal import out
from bot.settings import DATABASE_FILE
from bot.storage.base import Delivery, DeliveryStatus, Storage

logger = logging.getLogger(__name__)

DATABASE_HELP = (
    "the App's database (default: DATABASE_URL from the environment or .env, else "
    f"{DATABASE_FILE} at the top of this git work tree, else in this directory)"
)
ERROR_CHARS = 60
COLUMNS = ("id", "event", "action", "repository", "status", "attempts", "last error")

T = TypeVar("T")


def _shorten(text: str | None, limit: int = ERROR_CHARS) -> str:
    if not text:
        return "-"
    # One line per delivery: a traceback's newlines would break the table.
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_deliveries(deliveries: list[Delivery]) -> str:
    rows = [COLUMNS] + [
        (
            d.delivery_id,
            d.event,
            d.action or "-",
            d.repository or "-",
            d.status.value,
            str(d.attempts),
            _shorten(d.last_error),
        )
        for d in deliveries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


async def _retry(storage: Storage, delivery_id: str | None) -> list[str]:
    now = datetime.now(UTC)
    if delivery_id is None:
        failed = await storage.list_deliveries(DeliveryStatus.FAILED, limit=1_000_000)
        # Oldest first, as the workers would have run them; a row another caller re-queued
        # in the meantime is simply not in the answer.
        ids = [d.delivery_id for d in reversed(failed)]
        return [i for i in ids if await storage.requeue_failed(i, now)]
    if await storage.requeue_failed(delivery_id, now):
        return [delivery_id]
    stored = await storage.get_delivery(delivery_id)
    if stored is None:
        raise CommandRefused(f"no delivery {delivery_id!r}")
    raise CommandRefused(f"delivery {delivery_id!r} is {stored.status.value}, not failed")


def _cmd_list(args: argparse.Namespace) -> int:
    status = DeliveryStatus.FAILED if args.failed else None
    listed = run_on_database(args, lambda storage: storage.list_deliveries(status, args.limit))
    if isinstance(listed, int):
        return listed
    out(render_deliveries(listed))
    return 0


def _cmd_retry(args: argparse.Namespace) -> int:
    target = None if args.all_failed else args.delivery_id
    requeued = run_on_database(args, lambda storage: _retry(storage, target))
    if isinstance(requeued, int):
        return requeued
    for delivery_id in requeued:
        out(f"re-queued {delivery_id}")
    if not requeued:
        out("no failed deliveries")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(subparsers: Any) -> None:
    """Add `deliveries list` and `deliveries retry` to an argparse subparsers object."""
    deliveries = subparsers.add_parser("deliveries", help="inspect and retry webhook deliveries")
    actions = deliveries.add_subparsers(dest="deliveries_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="print stored deliveries, newest first")
    listing.add_argument("--failed", action="store_true", help="only deliveries parked as failed")
    listing.add_argument(
        "--limit", type=_positive, default=50, help="at most this many rows (default 50)"
    )
    listing.add_argument("--database-url", help=DATABASE_HELP)
    listing.set_defaults(handler=_cmd_list)

    retry = actions.add_parser("retry", help="queue failed deliveries again")
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("delivery_id", nargs="?", metavar="ID", help="the failed delivery's id")
    which.add_argument("--all-failed", action="store_true", help="every failed delivery")
    retry.add_argument("--database-url", help=DATABASE_HELP)
    retry.set_defaults(handler=_cmd_retry)
