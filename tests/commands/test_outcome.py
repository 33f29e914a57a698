"""What an override does to verdict and conclusion (bot.commands.outcome)."""

from __future__ import annotations

import itertools

import pytest

from bot.commands.grammar import Command, parse_command
from bot.commands.outcome import override_outcome
from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.conclusion import Cause, conclusion_for

# --- override outcomes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "judged", "mode"),
    list(itertools.product(["accept", "reject", "cancel"], list(Verdict), list(Mode))),
)
def test_override_outcome(action: str, judged: Verdict, mode: Mode) -> None:
    command = parse_command(f"/judge override {action}")
    assert command is not None
    outcome = override_outcome(command, judged, mode)
    final = {"accept": Verdict.ACCEPT, "reject": Verdict.REJECT, "cancel": judged}[action]
    assert outcome.final_verdict is final
    assert outcome.conclusion == conclusion_for(final, mode)
    assert outcome.human_override is (None if action == "cancel" else True)


def test_override_outcome_examples() -> None:
    accept = Command("override", action="accept")
    reject = Command("override", action="reject")
    assert override_outcome(accept, Verdict.REJECT, Mode.BLOCKING).conclusion == "success"
    assert override_outcome(reject, Verdict.ACCEPT, Mode.BLOCKING).conclusion == "failure"
    assert override_outcome(reject, Verdict.ACCEPT, Mode.ADVISORY).conclusion == "neutral"
    cancel = Command("override", action="cancel")
    assert override_outcome(cancel, Verdict.ESCALATE, Mode.BLOCKING).conclusion == (
        "action_required"
    )


@pytest.mark.parametrize("command", [Command("rerun"), Command("help"), Command("override")])
def test_override_outcome_needs_an_override(command: Command) -> None:
    with pytest.raises(ValueError, match="override command"):
        override_outcome(command, Verdict.ACCEPT, Mode.BLOCKING)


@pytest.mark.parametrize(
    ("cause", "expected"), [(Cause.JUDGES, "neutral"), (Cause.BUDGET, "action_required")]
)
def test_cancel_restores_the_conclusion_the_judges_run_had(cause: Cause, expected: str) -> None:
    cancel = Command("override", action="cancel")
    outcome = override_outcome(cancel, Verdict.UNDETERMINED, Mode.BLOCKING, cause)
    assert (outcome.final_verdict, outcome.conclusion) == (Verdict.UNDETERMINED, expected)
