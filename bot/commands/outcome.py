"""What an override does to the verdict and the check's conclusion. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from bot.commands.grammar import Command
from bot.judge.records import Verdict
from bot.judge.settings import Mode, OnOutage
from bot.judging.conclusion import Cause, conclusion_for, run_conclusion


@dataclass(frozen=True)
class OverrideOutcome:
    """The verdict and conclusion after an override command."""

    final_verdict: Verdict
    conclusion: str
    human_override: bool | None


def override_outcome(
    command: Command,
    judged_verdict: Verdict,
    mode: Mode,
    cause: Cause = Cause.JUDGES,
    on_outage: OnOutage = OnOutage.PASS,
) -> OverrideOutcome:
    """Accept and reject replace the judges' verdict (the conclusion still follows the
    mode: a human reject fails only in blocking mode); cancel restores it, with the
    conclusion the judges' run had (`cause`: a refusal is not a pass in blocking mode)."""
    if command.kind != "override" or command.action is None:
        raise ValueError("override_outcome needs an override command")
    if command.action == "cancel":
        conclusion = run_conclusion(judged_verdict, mode, cause, on_outage)
        return OverrideOutcome(judged_verdict, conclusion, None)
    verdict = Verdict.ACCEPT if command.action == "accept" else Verdict.REJECT
    return OverrideOutcome(verdict, conclusion_for(verdict, mode), True)
