"""Exit status, outputs and step summary from a sha's outcome (bot/action/outcome.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.action.outcome import (
    ExitStatus,
    RunOutcome,
    combined_go_no_go,
    exit_status_for,
    outcome_of,
    output_lines,
    step_summary,
    without_run,
)
from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.state import Override, ShaState
from tests.support.verdict_builders import make_record


@pytest.mark.parametrize(
    ("conclusion", "status"),
    [
        ("success", ExitStatus.PASSED),
        ("neutral", ExitStatus.PASSED),
        ("skipped", ExitStatus.PASSED),
        ("none", ExitStatus.PASSED),
        ("failure", ExitStatus.CHECK_FAILS),
        ("action_required", ExitStatus.CHECK_FAILS),
        ("timed_out", ExitStatus.CHECK_FAILS),
    ],
)
def test_the_job_fails_exactly_when_the_check_does(conclusion: str, status: ExitStatus) -> None:
    outcome = RunOutcome("reject", conclusion)
    assert exit_status_for("pull_request", outcome) is status
    assert exit_status_for("issue_comment", outcome) is ExitStatus.PASSED


def test_go_no_go_of_several_records() -> None:
    go = make_record().model_copy(update={"go_no_go": "GO"})
    nogo = go.model_copy(update={"go_no_go": "NO-GO"})
    unsure = go.model_copy(update={"go_no_go": "UNDETERMINED"})
    assert combined_go_no_go([go, go]) == "GO"
    assert combined_go_no_go([go, nogo, unsure]) == "NO-GO"
    assert combined_go_no_go([go, unsure]) == "UNDETERMINED"
    assert combined_go_no_go([]) == "UNDETERMINED"


def test_no_state_no_run() -> None:
    assert outcome_of(None) == RunOutcome()
    assert outcome_of(ShaState(owner="x")) == RunOutcome()


def test_an_override_is_concluded_by_the_table() -> None:
    state = ShaState(
        verdict="reject",
        conclusion="failure",
        mode=Mode.BLOCKING,
        override=Override(verdict=Verdict.ACCEPT, by="maintainer"),
    )
    outcome = outcome_of(state, {"output": {"title": "overridden", "summary": "by maintainer"}})
    assert (outcome.verdict, outcome.conclusion, outcome.go_no_go) == ("accept", "success", "GO")
    assert (outcome.title, outcome.summary) == ("overridden", "by maintainer")
    rejected = state.model_copy(update={"override": Override(verdict=Verdict.REJECT, by="m")})
    assert outcome_of(rejected).conclusion == "failure"


def test_outputs_are_one_line_each(tmp_path: Path) -> None:
    outcome = without_run("skipped", "neutral", "title", "summary\nmore")
    text = output_lines(outcome, tmp_path / "verdicts.jsonl", tmp_path / "cache.sqlite3")
    assert text.splitlines() == [
        "verdict=skipped",
        "conclusion=neutral",
        "go-no-go=UNDETERMINED",
        f"record-path={tmp_path / 'verdicts.jsonl'}",
        f"cache-path={tmp_path / 'cache.sqlite3'}",
        "check-run-url=",
    ]


def test_the_summary_without_and_with_a_run() -> None:
    assert "No `judge` check run for this push event" in step_summary(RunOutcome(), "o/r", "push")
    shown = RunOutcome("accept", "success", "GO", "https://x/runs/1", "accept · S4", "body")
    text = step_summary(shown, "o/r", "pull_request")
    assert text.startswith("### judge: accept · S4")
    assert "[The check run](https://x/runs/1)" in text and "body" in text
