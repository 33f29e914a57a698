"""A batch's required checks on its tip (`batch_checks`) and the judges' result there
(`batch_review.review_of`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.github.types import ChangedPath
from bot.judge.records import Verdict
from bot.judging.state import Override, ShaState, save_state, state_key
from bot.merging.batch_checks import CheckReport, required_checks
from bot.merging.batch_files import paths_of
from bot.merging.batch_review import review_of
from bot.storage.base import (
    BatchFailure,
    BatchState,
    CheckResult,
    MergeBatch,
    Storage,
)

NOW = datetime(2025, 3, 1, tzinfo=UTC)


def run(name: str, status: str, conclusion: str | None = None, id: int = 1) -> dict[str, Any]:
    return {
        "id": id,
        "name": name,
        "status": status,
        "conclusion": conclusion,
        "details_url": f"https://ci.example/{id}",
    }


def status(context: str, state: str) -> dict[str, Any]:
    return {"context": context, "state": state, "target_url": f"https://ci.example/{context}"}


@pytest.mark.parametrize(
    ("runs", "statuses", "expected"),
    [
        ([], [], CheckReport(CheckResult.PENDING)),
        ([run("ci", "in_progress")], [], CheckReport(CheckResult.PENDING)),
        ([run("ci", "completed", "success")], [], CheckReport(CheckResult.PASSED)),
        ([run("ci", "completed", "skipped")], [], CheckReport(CheckResult.PASSED)),
        (
            [run("ci", "completed", "failure")],
            [],
            CheckReport(CheckResult.FAILED, BatchFailure("ci", "failure https://ci.example/1")),
        ),
        # The newest run of a name counts: a rerun that passed.
        (
            [run("ci", "completed", "success", 2), run("ci", "completed", "failure", 1)],
            [],
            CheckReport(CheckResult.PASSED),
        ),
        ([], [status("ci", "pending")], CheckReport(CheckResult.PENDING)),
        ([], [status("ci", "success")], CheckReport(CheckResult.PASSED)),
        (
            [],
            [status("ci", "error")],
            CheckReport(CheckResult.FAILED, BatchFailure("ci", "error https://ci.example/ci")),
        ),
    ],
)
def test_one_required_check(
    runs: list[dict[str, Any]], statuses: list[dict[str, Any]], expected: CheckReport
) -> None:
    assert required_checks(["ci"], runs, statuses) == expected


def test_a_failure_wins_over_a_pending_check_and_nothing_required_passes() -> None:
    runs = [run("lint", "queued", id=1), run("ci", "completed", "timed_out", id=2)]
    report = required_checks(["lint", "ci"], runs, [])
    assert report.result is CheckResult.FAILED and report.failure is not None
    assert report.failure.check == "ci"
    assert required_checks([], runs, []) == CheckReport(CheckResult.PASSED)
    both = required_checks(["lint", "ci"], [run("ci", "completed", "success")], [])
    assert both == CheckReport(CheckResult.PENDING)


def test_a_rename_touches_both_paths() -> None:
    changed = [ChangedPath("b.md", "renamed", previous_path="a.md"), ChangedPath("c.md", "added")]
    assert paths_of(changed) == ["a.md", "b.md", "c.md"]


def batch(review_files: tuple[str, ...] = ("docs/shared.md",)) -> MergeBatch:
    return MergeBatch(
        id=3,
        repository="octo/hello",
        base_branch="main",
        members=((1, "a" * 40), (2, "b" * 40)),
        built_on="c" * 40,
        tip="d" * 40,
        review_files=review_files,
        split_from=None,
        state=BatchState.TESTING,
        ci=CheckResult.PASSED,
        review=CheckResult.PENDING,
        failure=None,
        reason="",
        created_at=NOW,
        updated_at=NOW,
    )


async def test_the_judges_result_on_the_tip(sqlite_storage: Storage) -> None:
    key = state_key("octo/hello", "d" * 40)
    assert await review_of(sqlite_storage, batch()) == (CheckResult.PENDING, None)
    await save_state(sqlite_storage, key, ShaState(owner="merge-batch-3"))
    assert await review_of(sqlite_storage, batch()) == (CheckResult.PENDING, None)
    url = "https://github.com/octo/hello/runs/9"
    rejected = ShaState(owner="merge-batch-3", verdict="reject", check_run_url=url)
    await save_state(sqlite_storage, key, rejected)
    failed = BatchFailure("judge", f"reject {url}", ("docs/shared.md",))
    assert await review_of(sqlite_storage, batch()) == (CheckResult.FAILED, failed)
    overridden = rejected.model_copy(
        update={"override": Override(verdict=Verdict.ACCEPT, by="lead")}
    )
    await save_state(sqlite_storage, key, overridden)
    assert await review_of(sqlite_storage, batch()) == (CheckResult.PASSED, None)
    await save_state(sqlite_storage, key, ShaState(verdict="skipped"))
    assert await review_of(sqlite_storage, batch()) == (CheckResult.PASSED, None)
