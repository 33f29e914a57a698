"""The protocol with partial views and unseated tiers: an accept counts only when every
judge whose accept forms it read every judged file, and authorship that unseats a tier
never makes the decision more lenient. Exhaustive over verdicts x whole/partial views x
available/unseated/unconfigured tiers x sensitive."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest

from bot.judge.engine.tiers import PARTIAL_VIEW, Decision, RoundResult, RunTier, next_step
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
Q, D, T = Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER
ORDER = (Q, D, T)


@dataclass(frozen=True)
class Panel:
    configured: frozenset[Tier]
    unseated: frozenset[Tier]
    whole: frozenset[Tier]
    sensitive: bool

    @property
    def available(self) -> frozenset[Tier]:
        return self.configured - self.unseated


@dataclass(frozen=True)
class Run:
    decision: Decision
    rounds: tuple[RoundResult, ...]


def run(verdicts: Mapping[Tier, Verdict | None], panel: Panel) -> Run:
    """Drive the machine as the engine does: each tier asked for answers with its verdict
    in `verdicts`, and its round is whole when its budget holds everything."""
    rounds: list[RoundResult] = []
    while True:
        step = next_step(
            rounds,
            sensitive=panel.sensitive,
            available=panel.available,
            whole=panel.whole,
            unseated=panel.unseated,
        )
        if isinstance(step, Decision):
            return Run(step, tuple(rounds))
        assert step.tier in panel.available, f"asked the unavailable {step.tier.value} tier"
        rounds.append(RoundResult(step.tier, verdicts[step.tier], whole=step.tier in panel.whole))


def subsets(tiers: frozenset[Tier]) -> Iterator[frozenset[Tier]]:
    items = sorted(tiers, key=ORDER.index)
    for size in range(len(items) + 1):
        for combo in itertools.combinations(items, size):
            yield frozenset(combo)


def panels() -> Iterator[Panel]:
    for configured in (frozenset({Q}), frozenset({Q, D}), frozenset(ORDER)):
        for unseated in subsets(configured - {Q}):
            for whole in subsets(configured):
                for sensitive in (False, True):
                    yield Panel(configured, unseated, whole, sensitive)


def scripts() -> Iterator[dict[Tier, Verdict | None]]:
    for q, d, t in itertools.product(OUTCOMES, repeat=3):
        yield {Q: q, D: d, T: t}


ALL_PANELS = list(panels())
ALL_SCRIPTS = list(scripts())


def forming_judges_read_everything(result: Run) -> bool:
    rounds = result.rounds
    if len(rounds) == 1:
        return rounds[0].whole
    if len(rounds) == 2:
        return rounds[1].whole
    ally = rounds[0] if rounds[0].verdict is A else rounds[1]
    return rounds[2].whole and ally.whole


def test_every_combination_keeps_the_rules() -> None:
    for panel in ALL_PANELS:
        for verdicts in ALL_SCRIPTS:
            result = run(verdicts, panel)
            decision, rounds = result.decision, result.rounds
            where = f"{panel} {verdicts} -> {decision} after {len(rounds)} round(s)"
            assert 1 <= len(rounds) <= 3, where
            if decision.verdict is A:
                assert forming_judges_read_everything(result), where
                if len(rounds) == 1:
                    # a lone quick accept: not sensitive, deep not unseated by authorship
                    assert not panel.sensitive and D not in panel.unseated, where
            if decision.mode is not None:
                assert decision.mode == PARTIAL_VIEW and decision.verdict is U, where
                # refused only where an accept was on the table
                assert rounds[-1].verdict is A, where
                assert decision.reason and "partial view" in decision.reason, where
            if decision.verdict in (E, U):
                assert decision.reason, where
            if rounds[0].verdict is A and len(rounds) == 1 and decision.verdict is not A:
                # the deep judge is asked whenever its whole view could make it an accept
                assert not (D in panel.available and D in panel.whole), where
                if decision.mode == PARTIAL_VIEW:
                    # refused only when no configured deep judge could read it all
                    assert not rounds[0].whole and D not in panel.whole, where
                elif D in panel.unseated:
                    assert decision.missing is D and "four-eyes" in (decision.reason or "")
            if FAIL in [r.verdict for r in rounds] or U in [r.verdict for r in rounds]:
                assert decision.verdict is U, where


def test_views_and_seating_change_nothing_without_an_accept() -> None:
    """Rejects, improves and escalations decide as before whatever each judge read, and an
    unseated tier counts as an unconfigured one for them."""
    for panel in ALL_PANELS:
        for verdicts in ALL_SCRIPTS:
            if A in verdicts.values():
                continue
            reference = Panel(panel.available, frozenset(), panel.available, panel.sensitive)
            got, expected = run(verdicts, panel), run(verdicts, reference)
            assert got.decision == expected.decision, (panel, verdicts)
            assert [r.tier for r in got.rounds] == [r.tier for r in expected.rounds]


def test_authorship_never_makes_the_decision_more_lenient() -> None:
    """Whatever each tier would answer, a panel with tiers unseated accepts only where
    the full panel (every configured tier seated) accepts too."""
    for panel in ALL_PANELS:
        full = Panel(panel.configured, frozenset(), panel.whole, panel.sensitive)
        for verdicts in ALL_SCRIPTS:
            if run(verdicts, panel).decision.verdict is A:
                assert run(verdicts, full).decision.verdict is A, (panel, verdicts)


def test_a_partial_view_never_makes_the_decision_more_lenient() -> None:
    """Reading less never turns a decision into an accept that reading more would not."""
    for panel in ALL_PANELS:
        everything = Panel(panel.configured, panel.unseated, panel.configured, panel.sensitive)
        for verdicts in ALL_SCRIPTS:
            if run(verdicts, panel).decision.verdict is A:
                assert run(verdicts, everything).decision.verdict is A, (panel, verdicts)


def test_with_every_view_whole_and_nothing_unseated_the_protocol_is_unchanged() -> None:
    """The defaults of `next_step` are whole views and no unseated tier."""
    for panel in ALL_PANELS:
        if panel.unseated or panel.whole != panel.configured:
            continue
        for verdicts in ALL_SCRIPTS:
            rounds: list[RoundResult] = []
            while True:
                explicit = next_step(
                    rounds,
                    sensitive=panel.sensitive,
                    available=panel.available,
                    whole=panel.whole,
                )
                default = next_step(rounds, sensitive=panel.sensitive, available=panel.available)
                assert explicit == default
                if isinstance(explicit, Decision):
                    break
                rounds.append(RoundResult(explicit.tier, verdicts[explicit.tier]))


ALL = frozenset(ORDER)
NONE: frozenset[Tier] = frozenset()


def panel(
    *,
    whole: frozenset[Tier],
    configured: frozenset[Tier] = ALL,
    unseated: frozenset[Tier] = NONE,
    sensitive: bool = False,
) -> Panel:
    return Panel(configured, unseated, whole, sensitive)


FULL_VIEW = panel(whole=ALL)
QUICK_CUT = panel(whole=frozenset({D, T}))  # a 6,000-character note: quick reads 4,000
NOBODY = panel(whole=NONE)  # a 40,000-character file: deep and tiebreaker read 32,000


@pytest.mark.parametrize(
    ("verdicts", "setup", "expected", "tiers_run"),
    [
        # a quick accept of a partial view goes to deep, whose whole view decides
        ((A, A, FAIL), QUICK_CUT, Decision(A, consensus="unanimous"), [Q, D]),
        ((A, R, A), QUICK_CUT, Decision(R), [Q, D]),  # no vote for the cut accept
        ((A, IM, FAIL), QUICK_CUT, Decision(IM), [Q, D]),
        # nobody reads it all: refused at once, deep is not asked
        ((A, A, A), NOBODY, "partial-view", [Q]),
        ((A, A, A), panel(whole=NONE, configured=frozenset({Q})), "partial-view", [Q]),
        ((A, A, A), panel(whole=frozenset({T})), "partial-view", [Q]),
        # rejects from a partial view work as before
        ((R, R, FAIL), NOBODY, Decision(R, consensus="unanimous"), [Q, D]),
        (
            (R, FAIL, FAIL),
            panel(whole=NONE, configured=frozenset({Q})),
            Decision(R, missing=D),
            [Q],
        ),
        # a deep accept of a partial view is refused; the tiebreaker's too
        ((IM, A, FAIL), NOBODY, "partial-view", [Q, D]),
        ((R, A, A), NOBODY, "partial-view", [Q, D, T]),
        ((R, A, R), NOBODY, Decision(R, consensus="majority"), [Q, D, T]),
        # a majority accept needs the tiebreaker and the judge it sided with
        ((R, A, A), QUICK_CUT, Decision(A, consensus="majority"), [Q, D, T]),
        ((R, A, A), panel(whole=frozenset({Q, D})), "partial-view", [Q, D, T]),
        ((A, R, A), panel(whole=ALL, sensitive=True), Decision(A, consensus="majority"), [Q, D, T]),
        # a sensitive accept whose deep judge cannot read everything goes to a human
        ((A, A, A), panel(whole=frozenset({Q}), sensitive=True), "escalate", [Q]),
        # authorship unseated deep: a lone quick accept escalates on four-eyes ...
        ((A, A, A), panel(whole=ALL, unseated=frozenset({D, T})), "four-eyes", [Q]),
        ((A, A, A), panel(whole=frozenset({D}), unseated=frozenset({D})), "four-eyes", [Q]),
        # ... unless no deep judge could have read it all anyway
        ((A, A, A), panel(whole=NONE, unseated=frozenset({D})), "partial-view", [Q]),
        # never configured: today's behaviour
        ((A, A, A), panel(whole=ALL, configured=frozenset({Q})), Decision(A), [Q]),
        ((A, A, A), panel(whole=ALL, unseated=frozenset({T})), Decision(A), [Q]),
        ((A, A, A), FULL_VIEW, Decision(A), [Q]),
    ],
)
def test_table(
    verdicts: tuple[Verdict | None, ...],
    setup: Panel,
    expected: Decision | str,
    tiers_run: list[Tier],
) -> None:
    result = run(dict(zip(ORDER, verdicts, strict=True)), setup)
    assert [r.tier for r in result.rounds] == tiers_run
    decision = result.decision
    if expected == "partial-view":
        assert (decision.verdict, decision.mode) == (U, PARTIAL_VIEW)
    elif expected == "four-eyes":
        assert (decision.verdict, decision.missing) == (E, D)
        assert decision.reason and "four-eyes" in decision.reason
    elif expected == "escalate":
        assert decision.verdict is E and decision.mode is None
        assert decision.reason and "cannot read every file" in decision.reason
    else:
        assert decision == expected


def test_a_history_that_ignored_a_partial_view_is_refused() -> None:
    """A partial quick accept with no whole-view deep judge ends there; a deep round
    after it is not a history the machine produces."""
    rounds = [RoundResult(Q, A, whole=False), RoundResult(D, A, whole=False)]
    with pytest.raises(ValueError, match="was not asked for"):
        next_step(rounds, whole=NONE)
    step = next_step(rounds[:1], whole=frozenset({D}))
    assert step == RunTier(D)
