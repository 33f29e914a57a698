"""`judge-bot deliveries list|retry` through `bot.cli.main`, on a temporary SQLite database."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import cli
from bot.storage import storage_from_url
from bot.storage.base import Delivery, DeliveryStatus, NewDelivery

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WORKER = "worker-a"


def new_delivery(delivery_id: str, n: int) -> NewDelivery:
    return NewDelivery(
        delivery_id=delivery_id,
        event="pull_request",
        action="opened",
        installation_id=42,
        repository="octo/repo",
        body=b"{}",
        received_at=T0 + timedelta(seconds=n),
    )


async def _seed(url: str) -> None:
    """f-1 and f-2 failed, d-1 done, p-1 pending (oldest to newest)."""
    storage = storage_from_url(url)
    await storage.open()
    try:
        for n, delivery_id in enumerate(["f-1", "f-2", "d-1", "p-1"]):
            assert await storage.record_delivery(new_delivery(delivery_id, n))
        now = T0 + timedelta(hours=1)
        for delivery_id in ("f-1", "f-2", "d-1"):
            [claimed] = await storage.claim_deliveries(WORKER, 1, 60, now)
            assert claimed.delivery_id == delivery_id
            if delivery_id == "d-1":
                assert await storage.complete_delivery(delivery_id, WORKER, now)
            else:
                error = f"Traceback:\n  boom {delivery_id} " + "x" * 200
                assert await storage.release_delivery(delivery_id, WORKER, error, None, now)
    finally:
        await storage.close()


async def _read(url: str, delivery_id: str) -> Delivery | None:
    storage = storage_from_url(url)
    await storage.open()
    try:
        return await storage.get_delivery(delivery_id)
    finally:
        await storage.close()


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.sqlite3'}"
    asyncio.run(_seed(url))
    return url


def status_of(url: str, delivery_id: str) -> DeliveryStatus:
    stored = asyncio.run(_read(url, delivery_id))
    assert stored is not None
    return stored.status


def test_list_prints_a_table_newest_first(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["deliveries", "list", "--database-url", database]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = ["id", "event", "action", "repository", "status", "attempts", "last", "error"]
    assert lines[0].split() == header
    assert [line.split()[0] for line in lines[1:]] == ["p-1", "d-1", "f-2", "f-1"]
    failed = lines[3].split()
    assert failed[:6] == ["f-2", "pull_request", "opened", "octo/repo", "failed", "1"]
    # The error on one line, shortened.
    assert "Traceback: boom f-2" in lines[3] and lines[3].endswith("…")
    assert len(lines[3]) < 160


def test_list_failed_with_limit(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["deliveries", "list", "--failed", "--database-url", database]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert ids == ["f-2", "f-1"]
    assert cli.main(["deliveries", "list", "--limit", "1", "--database-url", database]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert ids == ["p-1"]


def test_retry_one_requeues_it(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["deliveries", "retry", "f-1", "--database-url", database]) == 0
    assert capsys.readouterr().out == "re-queued f-1\n"
    stored = asyncio.run(_read(database, "f-1"))
    assert stored is not None
    assert stored.status is DeliveryStatus.PENDING and stored.attempts == 0
    assert status_of(database, "f-2") is DeliveryStatus.FAILED


@pytest.mark.parametrize(
    ("delivery_id", "message"),
    [
        ("nope", "judge-bot: no delivery 'nope'\n"),
        ("d-1", "judge-bot: delivery 'd-1' is done, not failed\n"),
        ("p-1", "judge-bot: delivery 'p-1' is pending, not failed\n"),
    ],
)
def test_retry_of_an_unknown_or_unfailed_delivery_is_one_line_and_exit_2(
    database: str, capsys: pytest.CaptureFixture[str], delivery_id: str, message: str
) -> None:
    assert cli.main(["deliveries", "retry", delivery_id, "--database-url", database]) == 2
    captured = capsys.readouterr()
    assert captured.err == message
    assert captured.out == ""
    assert status_of(database, "d-1") is DeliveryStatus.DONE
    assert status_of(database, "p-1") is DeliveryStatus.PENDING


def test_retry_all_failed_requeues_each_once(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["deliveries", "retry", "--all-failed", "--database-url", database]) == 0
    assert capsys.readouterr().out == "re-queued f-1\nre-queued f-2\n"
    assert status_of(database, "f-2") is DeliveryStatus.PENDING
    assert status_of(database, "d-1") is DeliveryStatus.DONE
    assert cli.main(["deliveries", "retry", "--all-failed", "--database-url", database]) == 0
    assert capsys.readouterr().out == "no failed deliveries\n"


def test_retry_needs_an_id_or_all_failed(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["deliveries", "retry", "--database-url", database])
    assert exited.value.code == 2
    assert "one of the arguments ID --all-failed is required" in capsys.readouterr().err


async def _park_unreadable(url: str) -> None:
    """A pending delivery whose body a newer version wrote, claimed by this version."""
    storage = storage_from_url(url)
    await storage.open()
    try:
        assert await storage.record_delivery(new_delivery("z-1", 9))
        await storage._execute(  # type: ignore[attr-defined]
            "UPDATE delivery_bodies SET compression = 'zstd'"
            " WHERE seq = (SELECT seq FROM deliveries WHERE delivery_id = 'z-1')"
        )
        claimed = await storage.claim_deliveries(WORKER, 5, 60, T0 + timedelta(hours=1))
        assert [d.delivery_id for d in claimed] == ["p-1"]
    finally:
        await storage.close()


def test_a_delivery_with_an_unreadable_body_is_listed_and_retried(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One body this version cannot read no longer makes every listing fail: the operator
    sees it failed with the reason, and can queue it again."""
    asyncio.run(_park_unreadable(database))
    assert cli.main(["deliveries", "list", "--failed", "--database-url", database]) == 0
    lines = capsys.readouterr().out.splitlines()
    [parked] = [line for line in lines if line.startswith("z-1 ")]
    assert "failed" in parked.split()
    assert "compression 'zstd'" in parked
    assert cli.main(["deliveries", "retry", "z-1", "--database-url", database]) == 0
    assert status_of(database, "z-1") is DeliveryStatus.PENDING
