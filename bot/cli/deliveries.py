"""Operators' delivery commands for the `judge-bot` CLI.

    judge-bot deliveries list [--failed] [--limit N] [--wide | --json] [--database-url URL]
    judge-bot deliveries retry (ID | --all-failed) [--database-url URL]

`list` prints a table whose last error is cut to fit a line; `--wide` prints it whole (and
when the next try is due), `--json` every field but the body, one JSON array, for scripts.

`retry` re-queues through `Storage.requeue_failed`, the same conditional update GitHub's
"Redeliver" uses, so a delivery a worker holds or has finished is never queued again, and
a running server's workers pick the re-queued ones up at their next poll. The database is
found as the judge's commands find it (`--database-url`, else DATABASE_URL, else the
default file). Exit status 2, one line on stderr, for an unknown id, a delivery that is
not failed, a bad DATABASE_URL or a database that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import logging
from datetime import UTC, datetime
from typing import Any, TypeVar

from bot.cli.arguments import whole_number
from bot.cli.database import DATABASE_HELP, CommandRefused, run_on_database
from bot.cli.terminal import out
from bot.storage.base import Delivery, DeliveryStatus, Storage

logger = logging.getLogger(__name__)

ERROR_CHARS = 60
DELIVERY_COLUMNS = ("id", "event", "action", "repository", "status", "attempts", "last error")
WIDE_DELIVERY_COLUMNS = (*DELIVERY_COLUMNS[:-1], "received", "next try", "last error")

T = TypeVar("T")


def _shorten(text: str | None, limit: int = ERROR_CHARS) -> str:
    if not text:
        return "-"
    # One line per delivery: a traceback's newlines would break the table.
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def _next_try(delivery: Delivery) -> str:
    """When a pending delivery is due; nothing is for the others."""
    if delivery.status is not DeliveryStatus.PENDING:
        return "-"
    return _when(delivery.next_attempt_at)


def render_deliveries(deliveries: list[Delivery], *, wide: bool = False) -> str:
    """The table, one delivery a line. `wide`: the last error whole (on its one line), with
    when each delivery arrived and when a pending one is tried next."""
    columns = WIDE_DELIVERY_COLUMNS if wide else DELIVERY_COLUMNS
    rows: list[tuple[str, ...]] = [columns]
    for d in deliveries:
        first = (
            d.delivery_id,
            d.event,
            d.action or "-",
            d.repository or "-",
            d.status.value,
            str(d.attempts),
        )
        if wide:
            error = _shorten(d.last_error, limit=len(d.last_error or ""))
            rows.append((*first, _when(d.received_at), _next_try(d), error))
        else:
            rows.append((*first, _shorten(d.last_error)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def deliveries_json(deliveries: list[Delivery]) -> str:
    """Every field of each delivery but its body, as a JSON array (times in ISO 8601 UTC)."""
    return json.dumps(
        [
            {
                "delivery_id": d.delivery_id,
                "event": d.event,
                "action": d.action,
                "installation_id": d.installation_id,
                "repository": d.repository,
                "status": d.status.value,
                "attempts": d.attempts,
                "received_at": _iso(d.received_at),
                "next_attempt_at": _iso(d.next_attempt_at),
                "finished_at": _iso(d.finished_at),
                "lease_owner": d.lease_owner,
                "lease_expires_at": _iso(d.lease_expires_at),
                "last_error": d.last_error,
            }
            for d in deliveries
        ],
        indent=2,
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
    out(deliveries_json(listed) if args.json else render_deliveries(listed, wide=args.wide))
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


def register(subparsers: Any) -> None:
    """Add `deliveries list` and `deliveries retry` to an argparse subparsers object."""
    deliveries = subparsers.add_parser("deliveries", help="inspect and retry webhook deliveries")
    actions = deliveries.add_subparsers(dest="deliveries_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="print stored deliveries, newest first")
    listing.add_argument("--failed", action="store_true", help="only deliveries parked as failed")
    listing.add_argument(
        "--limit", type=whole_number(1), default=50, help="at most this many rows (default 50)"
    )
    view = listing.add_mutually_exclusive_group()
    view.add_argument(
        "--wide",
        action="store_true",
        help="the last error whole, with when each arrived and is tried next",
    )
    view.add_argument(
        "--json", action="store_true", help="every field but the body, as a JSON array"
    )
    listing.add_argument("--database-url", help=DATABASE_HELP)
    listing.set_defaults(handler=_cmd_list)

    retry = actions.add_parser("retry", help="queue failed deliveries again")
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("delivery_id", nargs="?", metavar="ID", help="the failed delivery's id")
    which.add_argument("--all-failed", action="store_true", help="every failed delivery")
    retry.add_argument("--database-url", help=DATABASE_HELP)
    retry.set_defaults(handler=_cmd_retry)
