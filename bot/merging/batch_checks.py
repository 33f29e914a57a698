"""A batch's required checks, as GitHub reports them on its queue branch's tip. Pure.

    every required check passed (success, neutral, skipped) ──> PASSED
    any required check failed (check run or commit status) ───> FAILED, naming the first
                                                                  that failed and its link
    otherwise (not reported yet, queued, in progress) ───────> PENDING

A check is found by name among the tip's check runs (the newest of each name) and by
context among its commit statuses (GitHub's combined status keeps the newest of each).
The branch protection of the base decides which checks count; with none required, the
batch has nothing to wait for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.storage.base import BatchFailure, CheckResult

PASSING = frozenset({"success", "neutral", "skipped"})


@dataclass(frozen=True)
class CheckReport:
    result: CheckResult
    failure: BatchFailure | None = None


def _newest_runs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    newest: dict[str, Mapping[str, Any]] = {}
    for run in sorted(runs, key=lambda run: int(run.get("id") or 0)):
        newest[str(run.get("name"))] = run
    return newest


def _one(
    name: str, runs: Mapping[str, Mapping[str, Any]], statuses: Mapping[str, Mapping[str, Any]]
) -> CheckReport:
    run = runs.get(name)
    if run is not None:
        if run.get("status") != "completed":
            return CheckReport(CheckResult.PENDING)
        conclusion = str(run.get("conclusion") or "")
        if conclusion in PASSING:
            return CheckReport(CheckResult.PASSED)
        where = str(run.get("details_url") or run.get("html_url") or "")
        return CheckReport(CheckResult.FAILED, BatchFailure(name, f"{conclusion} {where}".strip()))
    status = statuses.get(name)
    if status is None or status.get("state") == "pending":
        return CheckReport(CheckResult.PENDING)
    if status.get("state") == "success":
        return CheckReport(CheckResult.PASSED)
    where = str(status.get("target_url") or "")
    return CheckReport(
        CheckResult.FAILED, BatchFailure(name, f"{status.get('state')} {where}".strip())
    )


def required_checks(
    required: Sequence[str],
    runs: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
) -> CheckReport:
    """The batch's CI result from the tip's check runs and commit statuses."""
    newest_runs = _newest_runs(runs)
    by_context = {str(status.get("context")): status for status in reversed(statuses)}
    reports = [_one(name, newest_runs, by_context) for name in required]
    for report in reports:
        if report.result is CheckResult.FAILED:
            return report
    if any(report.result is CheckResult.PENDING for report in reports):
        return CheckReport(CheckResult.PENDING)
    return CheckReport(CheckResult.PASSED)
