"""What a workflow run of `judge-bot action` ends with: the job's exit status, its outputs
and its step summary. Pure: the sha's state (and the run as GitHub shows it) in, text out.

The exit status follows the `judge` check run's conclusion, which the App's one table
chose (bot/judging/conclusion.py): the job fails exactly when that check fails, so a
workflow gate and the check agree. A human override is concluded by the same table's
`conclusion_for`, as the App's check run shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from bot.gfm import one_line
from bot.judge.records import GoNoGo, Verdict, VerdictRecord, go_no_go_of
from bot.judge.settings import Mode
from bot.judging.conclusion import conclusion_for
from bot.judging.state import ShaState

# GitHub's conclusions that fail a required check; neutral, skipped and success pass.
FAILING = frozenset({"failure", "action_required", "cancelled", "timed_out", "startup_failure"})
NONE = "none"


class ExitStatus(IntEnum):
    PASSED = 0
    CHECK_FAILS = 1
    BAD_INPUT = 2
    GITHUB_FAILED = 3


@dataclass(frozen=True)
class RunOutcome:
    """The run as the workflow sees it: `verdict` is a `Verdict` value, `skipped` (the run
    judged nothing) or `none` (no run); `conclusion` the check run's, or `none`."""

    verdict: str = NONE
    conclusion: str = NONE
    go_no_go: GoNoGo = "UNDETERMINED"
    check_run_url: str = ""
    title: str = ""
    summary: str = ""

    @property
    def exit_status(self) -> ExitStatus:
        return ExitStatus.CHECK_FAILS if self.conclusion in FAILING else ExitStatus.PASSED


def combined_go_no_go(records: Sequence[VerdictRecord]) -> GoNoGo:
    """One label for several records: NO-GO when any is, GO when all are."""
    labels = {record.go_no_go for record in records}
    if "NO-GO" in labels:
        return "NO-GO"
    if labels == {"GO"}:
        return "GO"
    return "UNDETERMINED"


def outcome_of(state: ShaState | None, shown: Mapping[str, Any] | None = None) -> RunOutcome:
    """The outcome stored for a sha, with the run's title and summary as GitHub shows it
    (`shown`: the check run's JSON, when it was read)."""
    if state is None or state.verdict is None:
        return RunOutcome()
    output = (shown or {}).get("output") or {}
    text = {
        "check_run_url": state.check_run_url,
        "title": str(output.get("title") or ""),
        "summary": str(output.get("summary") or ""),
    }
    if state.override is not None:
        mode = state.mode or Mode.ADVISORY
        verdict = state.override.verdict
        conclusion = conclusion_for(verdict, mode)
        return RunOutcome(verdict.value, conclusion, go_no_go_of(verdict), **text)
    label = combined_go_no_go(state.records)
    return RunOutcome(state.verdict, state.conclusion or NONE, label, **text)


def without_run(verdict: Verdict | str, conclusion: str, title: str, summary: str) -> RunOutcome:
    """The outcome of a run GitHub refused to show (a fork's read-only token)."""
    return RunOutcome(str(verdict), conclusion, "UNDETERMINED", "", title, summary)


def output_lines(outcome: RunOutcome, record_path: Path, cache_path: Path) -> str:
    """The step's outputs in GITHUB_OUTPUT's `name=value` lines; every value is one line
    (paths and URLs the runner made, words of the App's own)."""
    values = {
        "verdict": outcome.verdict,
        "conclusion": outcome.conclusion,
        "go-no-go": outcome.go_no_go,
        "record-path": str(record_path.resolve()),
        "cache-path": str(cache_path.resolve()),
        "check-run-url": outcome.check_run_url,
    }
    return "".join(f"{name}={one_line(value, 2_000)}\n" for name, value in values.items())


def step_summary(outcome: RunOutcome, repository: str, event: str) -> str:
    """The job's summary page: the check run's own title and summary (already scrubbed
    and fenced for GitHub by the renderer), or why there is none."""
    if outcome.verdict == NONE:
        return f"### judge\n\nNo `judge` check run for this {event} event of {repository}.\n"
    lines = [f"### judge: {outcome.title or outcome.verdict}", ""]
    if outcome.check_run_url:
        lines += [f"[The check run]({outcome.check_run_url})", ""]
    lines += [f"Conclusion: **{outcome.conclusion}**.", "", outcome.summary, ""]
    return "\n".join(lines)


def exit_status_for(event_name: str, outcome: RunOutcome) -> ExitStatus:
    """A comment's run is no gate (the `judge` check run it changed is), so a refused or
    rejected command does not fail it; every other run fails exactly when its check does."""
    if event_name == "issue_comment":
        return ExitStatus.PASSED
    return outcome.exit_status
