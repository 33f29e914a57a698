"""The verdict cache a run restores is plain data nobody vouches for (bot/action/cache.py):
any workflow that runs for a pull request, its author's included, can save the entry the
next run restores. Nothing in it may make the `judge` check pass, and nothing in it runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.action.cache import set_aside, take_in
from bot.judge.engine import CACHE_NAMESPACE
from bot.judging.state import STATE_NAMESPACE, state_key
from bot.storage import storage_from_url
from bot.storage.sqlite_import import Restored, foreign_objects
from tests.action.support import MAINTAINER, Runner, workflow_event
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)

OWN = ("table", "kv", "kv", "CREATE TABLE kv (...)")


def blocking(runner: Runner) -> None:
    runner.fake.add_commit(
        REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
    )


def opened_event(runner: Runner) -> dict[str, object]:
    sha = commit_files(runner.fake, {"docs/notes.md": GOOD_DOC})
    return workflow_event(pull_request_payload(runner.fake, "opened", open_pull(runner.fake, sha)))


def cache_file(runner: Runner) -> Path:
    return runner.home / "temp" / "judge-bot" / "verdict-cache.sqlite3"


def plant(path: Path, *statements: str) -> None:
    """What a workflow of the pull request's author could save under the cache's name."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def schema(path: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return {(row[0], row[1]) for row in conn.execute("SELECT type, name FROM sqlite_master")}
    finally:
        conn.close()


async def test_a_restored_accept_still_asks_the_judges_in_blocking_mode(
    local_runner: Runner,
) -> None:
    blocking(local_runner)
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    first = await local_runner.step("pull_request", opened_event(local_runner))
    assert first.outputs["conclusion"] == "success"
    asked = len(local_runner.llm.requests)
    # The next run restores a file holding an accept for this content (the first run's
    # own here; a planted one is the same bytes): the judges are asked all the same.
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    step = await local_runner.step("pull_request", opened_event(local_runner))
    assert step.outputs["conclusion"] == "success"
    assert len(local_runner.llm.requests) > asked


async def test_a_restored_accept_starts_no_merge(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    await local_runner.step("pull_request", opened_event(local_runner))
    asked = len(local_runner.llm.requests)
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    await local_runner.step(
        "pull_request", opened_event(local_runner), JUDGE_ACTION_MERGE="auto-merge"
    )
    assert len(local_runner.llm.requests) > asked


async def test_restored_run_state_is_left_behind(local_runner: Runner) -> None:
    """A sha's state (its run, an override) comes from this run and GitHub, never from
    the file: the saved file holds the states of this run's shas only."""
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    first = opened_event(local_runner)
    await local_runner.step("pull_request", first)
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    second = opened_event(local_runner)
    await local_runner.step("pull_request", second)
    conn = sqlite3.connect(cache_file(local_runner))
    states = {
        row[0] for row in conn.execute("SELECT key FROM kv WHERE namespace = ?", (STATE_NAMESPACE,))
    }
    conn.close()
    assert states == {state_key(REPO, head_sha(second))}


def head_sha(event: dict[str, object]) -> str:
    return str(event["pull_request"]["head"]["sha"])  # type: ignore[index]


async def test_a_comment_that_is_no_command_reads_nothing_for_the_cache(
    local_runner: Runner,
) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    await local_runner.step("pull_request", event)
    calls = len(local_runner.fake.calls)
    comment = comment_payload(REPO, int(event["number"]), "Looks good", MAINTAINER)  # type: ignore[call-overload]
    step = await local_runner.step("issue_comment", workflow_event(comment))
    assert step.status == 0
    assert len(local_runner.fake.calls) == calls


async def test_a_planted_trigger_is_refused_in_one_line_and_the_run_judges(
    runner: Runner,
) -> None:
    runner.llm.script(QUICK, scores(*ACCEPT))
    await runner.step("pull_request", opened_event(runner))
    plant(
        cache_file(runner),
        "CREATE TRIGGER planted AFTER INSERT ON kv BEGIN "
        "UPDATE kv SET value = '{}' WHERE namespace = 'judging-state'; END",
    )
    asked = len(runner.llm.requests)
    runner.llm.script(QUICK, scores(*ACCEPT))
    step = await runner.step("pull_request", opened_event(runner))
    assert step.status == 0
    assert "the restored verdict cache was refused: it holds trigger 'planted'" in step.stderr
    assert "judging with an empty cache" in step.stderr
    assert len(runner.llm.requests) > asked
    assert ("trigger", "planted") not in schema(cache_file(runner))


async def made(path: Path) -> Path:
    storage = storage_from_url(f"sqlite:///{path}")
    await storage.open()
    await storage.close()
    return path


async def test_only_verdicts_and_usage_are_taken_in(tmp_path: Path) -> None:
    restored = await made(tmp_path / "old.sqlite3")
    plant(
        restored,
        f"INSERT INTO kv VALUES ('{CACHE_NAMESPACE}', 'a', '{{\"record\": {{}}}}')",
        f"INSERT INTO kv VALUES ('{CACHE_NAMESPACE}', 'bad', 'not json')",
        "INSERT INTO kv VALUES ('judging-state', 'octo/hello@abc', '{\"override\": 1}')",
        "INSERT INTO usage VALUES ('judgments', 100, 3)",
        "INSERT INTO usage VALUES ('judgments', 'soon', 3)",
    )
    fresh = await made(tmp_path / "new.sqlite3")
    assert take_in(fresh, restored, verdicts=True) == Restored(verdicts=1)
    assert not restored.exists()
    conn = sqlite3.connect(fresh)
    assert conn.execute("SELECT namespace, key FROM kv").fetchall() == [(CACHE_NAMESPACE, "a")]
    assert conn.execute("SELECT scope, at, amount FROM usage").fetchall() == [("judgments", 100, 3)]
    conn.close()


async def test_verdicts_it_may_not_trust_are_left_behind(tmp_path: Path) -> None:
    restored = await made(tmp_path / "old.sqlite3")
    plant(restored, f"INSERT INTO kv VALUES ('{CACHE_NAMESPACE}', 'a', '{{}}')")
    fresh = await made(tmp_path / "new.sqlite3")
    assert take_in(fresh, restored, verdicts=False) == Restored(verdicts=0)
    conn = sqlite3.connect(fresh)
    assert conn.execute("SELECT count(*) FROM kv").fetchone() == (0,)
    conn.close()


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("CREATE VIEW verdict_view AS SELECT * FROM kv", "view 'verdict_view'"),
        ("CREATE TABLE extra (x)", "table 'extra'"),
        ("CREATE INDEX kv_value ON kv (value)", "index 'kv_value'"),
        ("DROP TRIGGER delivery_bodies_follow", None),
    ],
)
async def test_anything_but_the_apps_schema_is_refused(
    tmp_path: Path, statement: str, named: str | None
) -> None:
    restored = await made(tmp_path / "old.sqlite3")
    plant(restored, f"INSERT INTO kv VALUES ('{CACHE_NAMESPACE}', 'a', '{{}}')", statement)
    fresh = await made(tmp_path / "new.sqlite3")
    taken = take_in(fresh, restored, verdicts=True)
    if named is None:
        # Less than the App's schema is an older file, not a foreign one.
        assert taken == Restored(verdicts=1)
    else:
        assert taken.verdicts == 0
        assert named in taken.refused
    assert not restored.exists()


async def test_a_file_that_is_no_database_is_refused(tmp_path: Path) -> None:
    restored = tmp_path / "old.sqlite3"
    restored.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    fresh = await made(tmp_path / "new.sqlite3")
    taken = take_in(fresh, restored, verdicts=True)
    assert taken.refused.startswith("it is not a readable SQLite file")
    assert not restored.exists()


async def test_a_file_without_the_tables_takes_in_nothing(tmp_path: Path) -> None:
    restored = tmp_path / "old.sqlite3"
    plant(restored, "PRAGMA user_version = 1")
    fresh = await made(tmp_path / "new.sqlite3")
    assert take_in(fresh, restored, verdicts=True) == Restored()


def test_set_aside(tmp_path: Path) -> None:
    cache = tmp_path / "verdict-cache.sqlite3"
    assert set_aside(cache) is None
    cache.write_bytes(b"x")
    aside = set_aside(cache)
    assert aside is not None
    assert (aside.read_bytes(), cache.exists()) == (b"x", False)


def test_foreign_objects_are_named_and_sqlites_own_tables_are_not() -> None:
    restored = [
        OWN,
        ("table", "sqlite_stat1", "sqlite_stat1", "CREATE TABLE sqlite_stat1(tbl,idx,stat)"),
        ("trigger", "t", "kv", "CREATE TRIGGER t ..."),
        ("table", "kv2", "kv2", "CREATE TABLE kv2 (...)"),
    ]
    assert foreign_objects(restored, [OWN]) == ["table 'kv2'", "trigger 't'"]
    # The App's own table with other SQL is not the App's.
    assert foreign_objects([("table", "kv", "kv", "CREATE TABLE kv (x)")], [OWN]) == ["table 'kv'"]


async def test_a_refused_file_is_one_warning_in_this_process(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    await local_runner.step("pull_request", opened_event(local_runner))
    plant(cache_file(local_runner), "CREATE VIEW planted AS SELECT * FROM kv")
    capsys.readouterr()
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    step = await local_runner.step("pull_request", opened_event(local_runner))
    assert step.outputs["verdict"] == "accept"
    [line] = [x for x in capsys.readouterr().err.splitlines() if "refused" in x]
    assert "it holds view 'planted', not the App's; judging with an empty cache" in line
