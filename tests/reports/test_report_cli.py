"""`judge-bot triage` and `calibrate` end to end on a real SQLite file: the parser the main
command will carry, the database the server writes, the table and the JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import reports as cli
from bot.cli.terminal import table_width
from bot.judge.records import Tier, Verdict
from bot.reports.calibration_view import render_calibration
from bot.reports.kpis import calibrate
from bot.reports.sources import collector_paused
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.sqlite import SqliteStorage
from tests.reports.seeded import NOW, QUICK, SEEDED, human, judgment, store_all, stored_of
from tests.reports.test_triage import golden
from tests.support.fact_builders import facts_of


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="judge-bot")
    cli.register(main.add_subparsers(dest="command", required=True))
    return main


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    status: int = args.handler(args)
    return status


@pytest.fixture
def database(tmp_path: Path) -> str:
    """The seeded log, moved to the present so the default windows hold it."""
    shift = datetime.now(UTC) - NOW
    moved = [r.model_copy(update={"timestamp": r.timestamp + shift}) for r in SEEDED]
    path = tmp_path / "judge.sqlite3"

    async def fill() -> None:
        store = SqliteStorage(str(path))
        await store.open()
        try:
            await store_all(store, moved)
        finally:
            await store.close()

    asyncio.run(fill())
    return f"sqlite:///{path}"


def test_calibrate_json_says_ready_and_why(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["calibrate", "--json", "--database-url", database]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["ready"] is False
    assert [r["kpi"] for r in document["reasons"]] == [
        "sample",
        "false_positive_rate",
        "false_negative_rate",
        "go_rate",
        "availability",
    ]
    assert document["overall"]["false_positive_rate"] == {"value": 1 / 3, "count": 1, "total": 3}
    assert [r["scope"] for r in document["repositories"]] == ["octo/api", "octo/docs"]
    assert [m["name"] for m in document["models"]] == [
        "opencode/gpt-5-nano",
        "opencode/kimi-k2.5-free",
    ]
    assert document["thresholds"]["calibration_max_false_positive_rate"] == 0.1


def test_calibrate_table_for_one_repository(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        run(["calibrate", "--repo", "octo/api", "--width", "80", "--database-url", database]) == 0
    )
    text = capsys.readouterr().out
    assert "overall: NOT READY for blocking mode" in text
    assert "octo/api" in text and "octo/docs" not in text


def test_triage_table_and_json(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["triage", "--days", "14", "--database-url", database]) == 0
    assert "flagged (4):" in capsys.readouterr().out
    assert run(["triage", "--json", "--database-url", database]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["judgments"] == 3  # the last 7 days: a6 is 8 days old
    assert [f["task_id"] for f in document["flagged"]] == ["octo/api#2"]


def test_triage_lists_only_the_flagged_items_of_a_tag(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The database's octo/api#2 (escalated, 1.5 days back) is untagged; a new rejection
    carries the tag."""
    tagged = judgment("octo/docs", 30, Verdict.REJECT, "NO-GO",
                      [(Tier.QUICK, QUICK, Verdict.REJECT)], [], datetime.now(UTC))  # fmt: skip

    async def add() -> None:
        store = SqliteStorage(database.removeprefix("sqlite:///"))
        await store.open()
        try:
            record = tagged.model_dump(mode="json") | {"tags": ["security"]}
            await store.append_verdict(task_id=tagged.task_id, repository="octo/docs",
                                       head_sha=tagged.head_sha, verdict="reject",
                                       created_at=tagged.timestamp, record=record)  # fmt: skip
        finally:
            await store.close()

    asyncio.run(add())
    assert run(["triage", "--tag", "security", "--json", "--database-url", database]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [f["task_id"] for f in document["flagged"]] == ["octo/docs#30"]
    assert document["flagged"][0]["tags"] == ["security"] and document["tag"] == "security"
    assert document["judgments"] == 4  # the tag narrows the flagged items, not the counts
    assert run(["triage", "--tag", "nothing-has-this", "--database-url", database]) == 0
    assert "flagged: none" in capsys.readouterr().out


def test_a_database_that_cannot_be_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite:///{tmp_path}/no/such/dir/judge.sqlite3"
    assert run(["triage", "--database-url", missing]) == 2
    assert run(["calibrate", "--database-url", "mysql://nope"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(
        e.startswith("judge-bot: cannot read the database") for e in errors
    )


def test_bad_settings_are_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], database: str
) -> None:
    monkeypatch.setenv("JUDGE_CALIBRATION_MIN_SAMPLE", "none")
    assert run(["calibrate", "--database-url", database]) == 2
    monkeypatch.setenv("DATABASE_URL", "")
    assert run(["triage"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all("configuration error" in e for e in errors)


@pytest.mark.parametrize(
    "argv",
    [
        ["triage", "--days", "0"],
        ["triage", "--days", "week"],
        ["calibrate", "--days", "99999"],
        ["calibrate", "--repo", "not a repo"],
        ["triage", "--width", "10"],
        ["triage", "--width", "wide"],
        ["triage", "--tag", " "],
        ["triage", "--tag", "x" * 101],
        ["calibrate", "--tag", "security"],
    ],
)
def test_bad_arguments_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parser().parse_args(argv)
    assert exit_info.value.code == 2


def test_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parser().parse_args(["triage"])
    assert table_width(args.width) is None  # captured output is no terminal
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "77")
    assert table_width(args.width) == 77
    assert table_width(parser().parse_args(["triage", "--width", "90"]).width) == 90


def test_the_collector_rests_only_while_a_report_runs() -> None:
    import gc

    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_calibration_table_is_golden() -> None:
    window = [s for s in stored_of(SEEDED) if s.created_at >= NOW - timedelta(days=14)]
    facts, _ = facts_of(window)
    thresholds = CalibrationThresholds(calibration_price_per_1k_tokens={"opencode/gpt-5-nano": 0.5})
    report = calibrate(facts, thresholds, now=NOW, days=14, unreadable=1)
    golden("calibrate.txt", render_calibration(report, 140))


def test_a_ready_log_says_so() -> None:
    # a person agreed with the first judgment: without a human decision it is never ready
    agreed = human(SEEDED[0], Verdict.ACCEPT, "alice", SEEDED[1].timestamp)
    facts, _ = facts_of(stored_of([*SEEDED[:2], agreed]))
    thresholds = CalibrationThresholds(calibration_min_sample=2, calibration_min_go_rate=0.5,
                                       calibration_max_go_rate=1.0)  # fmt: skip
    report = calibrate(facts, thresholds, now=NOW, days=14)
    assert render_calibration(report, None).splitlines()[2] == "overall: READY for blocking mode"
    assert (
        render_calibration(calibrate([], thresholds, now=NOW, days=14), None).count(
            "no model ran in the window"
        )
        == 2
    )
    assert NOW - timedelta(days=14) == report.window.since
