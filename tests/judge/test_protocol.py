"""The tiered protocol state machine, table-driven over every verdict combination."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from bot.judge.engine.tiers import Decision, RoundResult, RunTier, next_step
from bot.judge.records import Tier, Verdict

A, IM, R, E, U = (
    Verdict.ACCEPT,
    Verdict.IMPROVE,
    Verdict.REJECT,
    Verdict.ESCALATE,
    Verdict.UNDETERMINED,
)
FAIL = None
OUTCOMES: list[Verdict | None] = [A, IM, R, E, U, FAIL]
ALL = frozenset(Tier)
QUICK_DEEP = frozenset({Tier.QUICK, Tier.DEEP})
QUICK_ONLY = frozenset({Tier.QUICK})


def run_to_decision(
    verdicts: Sequence[Verdict | None],
    *,
    sensitive: bool = False,
    available: frozenset[Tier] = ALL,
) -> tuple[Decision, int]:
    """Drive the machine with scripted verdicts, one per round asked for, the way the
    engine does. Returns the decision and how many rounds ran."""
    rounds: list[RoundResult] = []
    script = list(verdicts)
    while True:
        step = next_step(rounds, sensitive=sensitive, available=available)
        if isinstance(step, Decision):
            return step, len(rounds)
        if not script:
            raise ValueError(f"the protocol asked for the {step.tier.value} tier; script ended")
        rounds.append(RoundResult(step.tier, script.pop(0)))


# (script of verdicts, sensitive) -> (final verdict, consensus, rounds run)
# Rows for every combination reachable with all three tiers configured.
TABLE: dict[tuple[tuple[Verdict | None, ...], bool], tuple[Verdict, str | None, int]] = {
    # one round
    ((A,), False): (A, None, 1),
    ((E,), False): (E, None, 1),
    ((E,), True): (E, None, 1),
    ((U,), False): (U, None, 1),
    ((FAIL,), False): (U, None, 1),
    ((U,), True): (U, None, 1),
    ((FAIL,), True): (U, None, 1),
    # quick accept, sensitive -> deep always runs
    ((A, A), True): (A, "unanimous", 2),
    ((A, IM), True): (IM, None, 2),
    ((A, E), True): (E, None, 2),
    ((A, FAIL), True): (U, None, 2),
    ((A, U), True): (U, None, 2),
    # quick improve -> deep
    ((IM, A), False): (A, None, 2),
    ((IM, IM), False): (E, None, 2),
    ((IM, R), False): (R, None, 2),
    ((IM, E), False): (E, None, 2),
    ((IM, FAIL), False): (U, None, 2),
    ((IM, U), False): (U, None, 2),
    # quick reject -> deep confirms (or not)
    ((R, R), False): (R, "unanimous", 2),
    ((R, IM), False): (IM, None, 2),
    ((R, E), False): (E, None, 2),
    ((R, FAIL), False): (U, None, 2),
    ((R, U), False): (U, None, 2),
}
# accept/reject splits -> tiebreaker decides
for split, sensitive in (((A, R), True), ((R, A), False), ((R, A), True)):
    TABLE[(*split, A), sensitive] = (A, "majority", 3)
    TABLE[(*split, R), sensitive] = (R, "majority", 3)
    TABLE[(*split, IM), sensitive] = (E, None, 3)
    TABLE[(*split, E), sensitive] = (E, None, 3)
    TABLE[(*split, U), sensitive] = (U, None, 3)
    TABLE[(*split, FAIL), sensitive] = (U, None, 3)
# Without `sensitive`, quick improve/reject behave the same; list them too.
for (script, sensitive), outcome in list(TABLE.items()):
    if sensitive and script[0] in (IM, R, E, U, FAIL):
        TABLE.setdefault((script, False), outcome)
    if not sensitive and script[0] in (IM, R):
        TABLE.setdefault((script, True), outcome)


@pytest.mark.parametrize(("key", "expected"), sorted(TABLE.items(), key=repr))
def test_table(
    key: tuple[tuple[Verdict | None, ...], bool], expected: tuple[Verdict, str | None, int]
) -> None:
    script, sensitive = key
    decision, rounds = run_to_decision(script, sensitive=sensitive)
    assert (decision.verdict, decision.consensus, rounds) == expected
    if decision.verdict in (Verdict.ESCALATE, Verdict.UNDETERMINED):
        assert decision.reason


def test_table_covers_every_reachable_path() -> None:
    """Enumerate every script of up to three outcomes; each one that the machine
    consumes exactly is a row of TABLE, and the machine's invariants hold."""
    seen = set()
    for length in (1, 2, 3):
        for script in itertools.product(OUTCOMES, repeat=length):
            for sensitive in (False, True):
                try:
                    decision, rounds = run_to_decision(script, sensitive=sensitive)
                except ValueError:
                    continue  # the machine asked for more rounds than scripted
                if rounds != length:
                    continue  # the script was longer than the path
                seen.add((script, sensitive))
                assert rounds <= 3
                # A failed round never rejects; it ends the protocol undetermined.
                if script[-1] in (FAIL, U):
                    assert decision.verdict is Verdict.UNDETERMINED
                if decision.verdict is Verdict.REJECT:
                    assert FAIL not in script and len(script) >= 2
                # Sensitive changes are never accepted on the quick judge alone.
                if sensitive and decision.verdict is Verdict.ACCEPT:
                    assert rounds >= 2
    assert seen == set(TABLE)


@pytest.mark.parametrize("quick", OUTCOMES)
@pytest.mark.parametrize("sensitive", [False, True])
def test_quick_only_panel(quick: Verdict | None, sensitive: bool) -> None:
    """Single-model setup (phase A/B): quick's verdict is final, a sensitive accept
    escalates, failures are undetermined."""
    decision, rounds = run_to_decision([quick], sensitive=sensitive, available=QUICK_ONLY)
    assert rounds == 1
    expected = {A: E if sensitive else A, IM: IM, R: R, E: E, U: U, FAIL: U}[quick]
    assert decision.verdict is expected


@pytest.mark.parametrize(("quick", "deep"), [(A, R), (R, A)])
def test_split_without_tiebreaker_escalates(quick: Verdict, deep: Verdict) -> None:
    decision, rounds = run_to_decision([quick, deep], sensitive=True, available=QUICK_DEEP)
    assert rounds == 2
    assert decision.verdict is Verdict.ESCALATE
    assert decision.reason is not None and "no tiebreaker" in decision.reason


@pytest.mark.parametrize(
    ("quick", "deep", "verdict"), [(IM, A, A), (IM, IM, E), (R, R, R), (IM, R, R), (R, IM, IM)]
)
def test_quick_deep_panel_matches_full_panel_without_split(
    quick: Verdict, deep: Verdict, verdict: Verdict
) -> None:
    decision, _ = run_to_decision([quick, deep], available=QUICK_DEEP)
    assert decision.verdict is verdict


def test_no_quick_tier_is_undetermined() -> None:
    step = next_step([], available=frozenset())
    assert step == Decision(Verdict.UNDETERMINED, reason="no quick judge is configured")


def test_first_step_is_quick() -> None:
    assert next_step([]) == RunTier(Tier.QUICK)


@pytest.mark.parametrize(
    ("rounds", "sensitive"),
    [
        ([RoundResult(Tier.DEEP, A)], False),
        ([RoundResult(Tier.QUICK, A), RoundResult(Tier.DEEP, A)], False),
        ([RoundResult(Tier.QUICK, IM), RoundResult(Tier.TIEBREAKER, A)], False),
        (
            [
                RoundResult(Tier.QUICK, IM),
                RoundResult(Tier.DEEP, A),
                RoundResult(Tier.TIEBREAKER, A),
            ],
            False,
        ),
        ([RoundResult(Tier.QUICK, FAIL), RoundResult(Tier.DEEP, A)], True),
        ([RoundResult(Tier.QUICK, A)] * 4, True),
    ],
)
def test_impossible_histories_are_refused(rounds: list[RoundResult], sensitive: bool) -> None:
    with pytest.raises(ValueError):
        next_step(rounds, sensitive=sensitive)


def test_script_too_short_is_an_error() -> None:
    with pytest.raises(ValueError, match="asked for the deep tier"):
        run_to_decision([IM])
