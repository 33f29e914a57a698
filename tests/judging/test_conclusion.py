"""The `judge` check run's conclusion for every verdict, mode and cause."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from bot.judge.engine.judgment import admission_refused
from bot.judge.engine.rounds import attempt_refusal
from bot.judge.engine.tiers import PARTIAL_VIEW
from bot.judge.records import Tier, Verdict
from bot.judge.settings import Mode, OnOutage
from bot.judging.conclusion import (
    NEXT_STEP,
    UNDETERMINED_BLOCKING,
    VERDICT_SEVERITY,
    Cause,
    cause_of,
    combined_verdict,
    conclusion_for,
    run_cause,
    run_conclusion,
    run_outcome,
)
from tests.support.conclusion_oracles import REFUSALS
from tests.support.verdict_builders import make_record, make_round, make_unjudged

CONCLUSIONS = {
    (Verdict.ACCEPT, Mode.ADVISORY): "success",
    (Verdict.ACCEPT, Mode.BLOCKING): "success",
    (Verdict.IMPROVE, Mode.ADVISORY): "neutral",
    (Verdict.IMPROVE, Mode.BLOCKING): "failure",
    (Verdict.REJECT, Mode.ADVISORY): "neutral",
    (Verdict.REJECT, Mode.BLOCKING): "failure",
    (Verdict.ESCALATE, Mode.ADVISORY): "neutral",
    (Verdict.ESCALATE, Mode.BLOCKING): "action_required",
    (Verdict.UNDETERMINED, Mode.ADVISORY): "neutral",
    (Verdict.UNDETERMINED, Mode.BLOCKING): "neutral",
}


def test_conclusion_table_covers_every_verdict_and_mode() -> None:
    assert set(CONCLUSIONS) == set(itertools.product(Verdict, Mode))


@pytest.mark.parametrize(("verdict", "mode"), list(CONCLUSIONS))
def test_conclusion_for(verdict: Verdict, mode: Mode) -> None:
    """Only accept succeeds; only blocking mode fails; undetermined never fails."""
    assert conclusion_for(verdict, mode) == CONCLUSIONS[(verdict, mode)]


def test_undetermined_never_fails() -> None:
    assert {conclusion_for(Verdict.UNDETERMINED, m) for m in Mode} == {"neutral"}


@pytest.mark.parametrize(("a", "b"), list(itertools.product(Verdict, Verdict)))
def test_combined_verdict_is_the_worst(a: Verdict, b: Verdict) -> None:
    """reject > escalate > improve > undetermined > accept, whatever the order."""
    expected = a if VERDICT_SEVERITY.index(a) <= VERDICT_SEVERITY.index(b) else b
    assert combined_verdict([a, b]) is expected
    assert combined_verdict([b, a]) is expected


def test_combined_verdict_order_and_empty() -> None:
    assert VERDICT_SEVERITY == (
        Verdict.REJECT,
        Verdict.ESCALATE,
        Verdict.IMPROVE,
        Verdict.UNDETERMINED,
        Verdict.ACCEPT,
    )
    assert set(VERDICT_SEVERITY) == set(Verdict)
    assert combined_verdict([]) is Verdict.UNDETERMINED
    assert combined_verdict([Verdict.ACCEPT] * 3) is Verdict.ACCEPT


# --- why a verdict was reached, and the run's conclusion ------------------------------

# The whole table, written out by hand (cause x mode x on_outage -> an undetermined
# run's conclusion). In blocking mode only "nothing owed", a granted skip and (while
# on_outage is pass) a provider outage pass; everything else asks for a maintainer.
# A new Cause without a row here fails `test_cause_table_covers_every_cause`.
_BLOCKING_PASS = {Cause.NOTHING_TO_JUDGE, Cause.SKIP_GRANTED}
UNDETERMINED_BY_CAUSE: dict[tuple[Mode, Cause, OnOutage], str] = {
    (Mode.ADVISORY, cause, on_outage): "neutral" for cause in Cause for on_outage in OnOutage
}
UNDETERMINED_BY_CAUSE.update(
    {
        (Mode.BLOCKING, Cause.JUDGES, OnOutage.PASS): "neutral",
        (Mode.BLOCKING, Cause.JUDGES, OnOutage.BLOCK): "action_required",
    }
)
for _cause in (
    Cause.THROTTLED,
    Cause.BUDGET,
    Cause.UNCONFIGURED,
    Cause.FOUR_EYES,
    Cause.MECHANICAL,
    Cause.PARTIAL_VIEW,
    Cause.UNANSWERED,
    Cause.NOTHING_TO_JUDGE,
    Cause.SKIP_GRANTED,
    Cause.CI_WAIT,
    Cause.HELD,
    Cause.UNREAD,
    Cause.CONFIG_ERROR,
    Cause.GAVE_UP,
    Cause.NO_KEYS,
):
    for _on_outage in OnOutage:
        UNDETERMINED_BY_CAUSE[(Mode.BLOCKING, _cause, _on_outage)] = (
            "neutral" if _cause in _BLOCKING_PASS else "action_required"
        )


def test_cause_table_covers_every_cause() -> None:
    assert set(UNDETERMINED_BY_CAUSE) == set(itertools.product(Mode, Cause, OnOutage))
    assert set(UNDETERMINED_BLOCKING) == set(Cause)
    assert set(NEXT_STEP) == set(Cause)


@pytest.mark.parametrize(
    ("verdict", "mode", "cause", "on_outage"),
    list(itertools.product(Verdict, Mode, Cause, OnOutage)),
)
def test_run_conclusion_for_every_verdict_mode_cause_and_outage_rule(
    verdict: Verdict, mode: Mode, cause: Cause, on_outage: OnOutage
) -> None:
    expected = (
        UNDETERMINED_BY_CAUSE[(mode, cause, on_outage)]
        if verdict is Verdict.UNDETERMINED
        else CONCLUSIONS[(verdict, mode)]
    )
    assert run_conclusion(verdict, mode, cause, on_outage) == expected


def test_paths_that_pass_a_blocking_check() -> None:
    """The measure of the issue: how many (verdict, cause) paths end success or neutral
    in blocking mode. Before the gate guarantee: accept, undetermined for the judges,
    unconfigured and mechanical (the table then), and nine runs no table covered that all
    ended neutral (a skip label, the `[skip judge]` marker, nothing to judge, a CI wait,
    a loop hold, no readable file, a config error, a models error, a give-up): 13. After:
    4, and 3 with `on_outage: block`."""
    passing = {
        (verdict, cause)
        for verdict in Verdict
        for cause in Cause
        if run_conclusion(verdict, Mode.BLOCKING, cause) in ("success", "neutral")
        and (verdict is Verdict.UNDETERMINED or cause is Cause.JUDGES)
    }
    assert passing == {
        (Verdict.ACCEPT, Cause.JUDGES),
        (Verdict.UNDETERMINED, Cause.JUDGES),
        (Verdict.UNDETERMINED, Cause.NOTHING_TO_JUDGE),
        (Verdict.UNDETERMINED, Cause.SKIP_GRANTED),
    }
    assert not any(
        run_conclusion(Verdict.UNDETERMINED, Mode.BLOCKING, cause, OnOutage.BLOCK) == "neutral"
        for cause in Cause
        if cause not in _BLOCKING_PASS
    )


def test_a_refusal_never_passes_a_blocking_check() -> None:
    for cause in REFUSALS:
        assert run_conclusion(Verdict.UNDETERMINED, Mode.BLOCKING, cause) not in (
            "success",
            "neutral",
            "skipped",
        )
    assert set(Cause) - _BLOCKING_PASS - {Cause.JUDGES} == REFUSALS


def test_an_unread_file_keeps_the_run_from_an_accept() -> None:
    accepted = make_record()
    assert run_outcome([accepted]) == (Verdict.ACCEPT, Cause.JUDGES)
    assert run_outcome([accepted], unread=True) == (Verdict.UNDETERMINED, Cause.UNREAD)
    assert run_outcome([], unread=True) == (Verdict.UNDETERMINED, Cause.UNREAD)
    rejected = make_record(verdict=Verdict.REJECT, final_decision=Verdict.REJECT)
    assert run_outcome([rejected], unread=True) == (Verdict.REJECT, Cause.JUDGES)
    # A refusal of the judges' own speaks for itself; an outage does not hide the unread.
    throttled = make_unjudged(mode="throttled")
    assert run_outcome([throttled], unread=True) == (Verdict.UNDETERMINED, Cause.THROTTLED)
    assert run_outcome([make_unjudged()], unread=True) == (Verdict.UNDETERMINED, Cause.UNREAD)


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("throttled", Cause.THROTTLED),
        ("budget", Cause.BUDGET),
        ("unconfigured", Cause.UNCONFIGURED),
        ("four-eyes", Cause.FOUR_EYES),
        ("mechanical", Cause.MECHANICAL),
        (PARTIAL_VIEW, Cause.PARTIAL_VIEW),
        ("quick", Cause.JUDGES),
        ("deep", Cause.JUDGES),
        ("none", Cause.JUDGES),
        ("human", Cause.JUDGES),
    ],
)
def test_cause_of_reads_the_record_mode(mode: str, cause: Cause) -> None:
    assert cause_of(make_unjudged(mode=mode)) is cause


def test_the_engine_writes_the_modes_cause_of_reads() -> None:
    """The modes come from bot.judge.engine.judgment; a renamed one would silently fail open."""
    assert cause_of(make_unjudged(mode=admission_refused("throttled: 21 in the hour").mode)) is (
        Cause.THROTTLED
    )
    assert cause_of(make_unjudged(mode=admission_refused("daily budget exhausted").mode)) is (
        Cause.BUDGET
    )


def test_a_budget_cut_mid_judgment_is_a_budget_refusal() -> None:
    """The day's calls ran out between rounds: the judges were not failing, the budget
    stopped them, so the record counts as a budget refusal, not an outage."""
    cut = attempt_refusal(remaining=60.0, calls_left=0)
    assert cut is not None
    failed = make_round(verdict=None, scores={}, average=None, error=cut.error)
    record = make_unjudged(mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[failed])
    assert cause_of(record) is Cause.BUDGET
    timed_out = make_round(verdict=None, scores={}, average=None, error="timeout after 30s")
    outage = make_unjudged(
        mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[timed_out]
    )
    assert cause_of(outage) is Cause.JUDGES
    wall_clock = attempt_refusal(remaining=0.0, calls_left=5)
    assert wall_clock is not None
    slow = make_round(verdict=None, scores={}, average=None, error=wall_clock.error)
    assert cause_of(make_unjudged(mode="quick", previous_rounds=[slow])) is Cause.JUDGES


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        ("unparseable answer: expected JSON", Cause.UNANSWERED),
        ("empty answer", Cause.UNANSWERED),
        ("cut-off answer: answer cut at the output-token limit (1024 tokens)", Cause.UNANSWERED),
        ("timeout after 30s", Cause.JUDGES),
        ("timeout", Cause.JUDGES),
        ("HTTP 429 from openai", Cause.JUDGES),
        ("HTTP 503 from openai", Cause.JUDGES),
        ("transport error (ConnectError)", Cause.JUDGES),
        ("malformed response envelope", Cause.JUDGES),
        ("refused prompt: HTTP 400 from openai: filtered by the content policy", Cause.UNANSWERED),
        ("context overflow: HTTP 422 from openai", Cause.UNANSWERED),
        ("HTTP 401 from openai", Cause.JUDGES),
    ],
)
def test_a_judge_that_answered_nothing_usable_is_no_outage(error: str, cause: Cause) -> None:
    """Content can steer a judge off its answer format (or into a refusal): reached and
    answering, the judge is not out, so the run is no pass in blocking mode."""
    failed = make_round(verdict=None, scores={}, average=None, error=error)
    record = make_unjudged(mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[failed])
    assert cause_of(record) is cause


def test_an_unanswered_round_counts_even_when_a_later_one_timed_out() -> None:
    """Quick's prompt overflowed (the author's text), deep then timed out: the later
    outage must not make the run an outage that blocking mode may pass."""
    overflow = make_round(verdict=None, scores={}, average=None, error="context overflow: x")
    timed_out = make_round(
        verdict=None, scores={}, average=None, error="timeout after 30s", judge_tier=Tier.DEEP
    )
    record = make_unjudged(mode="quick", previous_rounds=[overflow, timed_out])
    assert cause_of(record) is Cause.UNANSWERED


def test_run_cause_prefers_a_refusal_among_the_undetermined_groups() -> None:
    outage = make_unjudged(mode="quick")
    throttled = make_unjudged(mode="throttled")
    accepted = make_record()
    assert run_cause([accepted, outage, throttled]) is Cause.THROTTLED
    assert run_cause([outage, accepted]) is Cause.JUDGES
    assert run_cause([make_unjudged(mode="budget"), throttled]) is Cause.BUDGET
    # Only the groups behind the combined verdict count: a reject outweighs the refusal.
    rejected = make_record(verdict=Verdict.REJECT, final_decision=Verdict.REJECT)
    assert run_cause([throttled, rejected]) is Cause.JUDGES
    assert run_cause([]) is Cause.JUDGES


def test_docs_state_the_same_table() -> None:
    """docs/judging.md "The gate's guarantee" lists every cause with the code's conclusion."""
    text = (Path(__file__).parents[2] / "docs" / "judging.md").read_text(encoding="utf-8")
    section = text.split("## The gate's guarantee", 1)[1].split("What each cause is", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([a-z-]+)`[^|]* \| (\w+) \| (\w+)", line)
        if match:
            rows[Cause(match.group(1))] = (match.group(2), match.group(3))
    assert set(rows) == set(Cause)
    for cause, (advisory, blocking) in rows.items():
        assert run_conclusion(Verdict.UNDETERMINED, Mode.ADVISORY, cause) == advisory
        assert run_conclusion(Verdict.UNDETERMINED, Mode.BLOCKING, cause) == blocking
