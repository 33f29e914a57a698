"""`judge-bot deliveries list --wide | --json`: the whole reason a delivery failed or waits,
which the table cuts to a line's width."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import cli
from bot.storage import storage_from_url
from bot.storage.base import NewDelivery

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REASON = (
    "bot.judging.handlers.on_pull_request: GitHubUnavailable: GitHub at api.github.com "
    "unavailable: POST /app/installations/42/access_tokens: ClientConnectorError: Cannot "
    "connect to host api.github.com:443 ssl:default [Connection refused] (5 attempts)"
)


async def _seed(url: str) -> None:
    """w-1 waits for GitHub (pending, due later), f-1 parked as failed."""
    storage = storage_from_url(url)
    await storage.open()
    try:
        for n, delivery_id in enumerate(["w-1", "f-1"]):
            await storage.record_delivery(
                NewDelivery(delivery_id, "pull_request", "opened", 42, "octo/repo", b"{}", T0)
            )
            [claimed] = await storage.claim_deliveries("w", 1, 60, T0 + timedelta(seconds=n))
            assert claimed.delivery_id == delivery_id
        due = T0 + timedelta(minutes=4)
        assert await storage.defer_delivery("w-1", "w", due, REASON)
        assert await storage.release_delivery("f-1", "w", "boom\n  at line 3", None, T0)
    finally:
        await storage.close()


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.sqlite3'}"
    asyncio.run(_seed(url))
    return url


def test_the_table_cuts_the_reason_the_wide_one_does_not(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["deliveries", "list", "--database-url", database]) == 0
    narrow = capsys.readouterr().out
    assert REASON not in narrow and "GitHubUnavailable" in narrow
    assert cli.main(["deliveries", "list", "--wide", "--database-url", database]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert "next try" in wide[0] and "received" in wide[0]
    [waiting] = [line for line in wide if line.startswith("w-1")]
    assert waiting.endswith(REASON)
    assert "2026-03-01 12:04:00" in waiting, "when it is tried next"
    [failed] = [line for line in wide if line.startswith("f-1")]
    assert failed.endswith("boom at line 3"), "one line per delivery"


def test_json_has_every_field_but_the_body(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["deliveries", "list", "--json", "--database-url", database]) == 0
    listed = json.loads(capsys.readouterr().out)
    by_id = {d["delivery_id"]: d for d in listed}
    assert by_id["w-1"]["last_error"] == REASON
    assert by_id["w-1"]["status"] == "pending" and by_id["w-1"]["attempts"] == 0
    assert by_id["w-1"]["next_attempt_at"] == "2026-03-01T12:04:00+00:00"
    assert by_id["f-1"]["last_error"] == "boom\n  at line 3"
    assert "body" not in by_id["f-1"]


def test_wide_and_json_do_not_go_together(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["deliveries", "list", "--wide", "--json", "--database-url", database])
