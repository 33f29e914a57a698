"""The tiered judging protocol as a pure state machine.

`next_step(rounds, sensitive=..., available=...)` looks at the rounds run so far (each
a tier and the verdict its scores gave, or None when the round failed) and returns
either `RunTier(tier)` or a `Decision(verdict, consensus, reason)`. The engine loops:
run the tier, append the result, ask again. At most three rounds ever run.

    quick ── accept ──────────────────────────────► ACCEPT   (sensitive: go to deep)
      │ ── improve / reject ──► deep
      │ ── escalate ─────────────────────────────► ESCALATE
      │ ── failed ───────────────────────────────► UNDETERMINED (fail open)
    deep (after quick Q)
      Q=accept  D=accept  ► ACCEPT (unanimous)      Q=accept D=improve ► IMPROVE
      Q=improve D=accept  ► ACCEPT                  Q=improve D=improve ► ESCALATE
      Q=improve D=reject  ► REJECT                  Q=reject D=improve ► IMPROVE
      Q=reject  D=reject  ► REJECT (unanimous)
      Q=accept  D=reject or Q=reject D=accept ► tiebreaker
      D=escalate ► ESCALATE;  D failed ► UNDETERMINED
    tiebreaker: accept/reject is final (majority); anything else ► ESCALATE;
                failed ► UNDETERMINED

Readings of the seeds this encodes (docs/judging.md gives the reasons):
- A quick reject is not final: the quick judge sees truncated content, and the seed
  lists "quick reject + deep accept -> tiebreaker", which needs the deep round.
- The deeper judge sees the full content, so when the two do not split accept vs
  reject, deep's verdict stands; two "improve" verdicts are ambiguous and go to a human.
- A failed round never rejects: it ends the protocol as undetermined.
- Missing tiers (not configured, or left empty by the four-eyes rule: `available`
  holds only the tiers that can run): without deep, quick's verdict is final, except
  that a sensitive accept needs a second look and escalates; a split without a
  tiebreaker escalates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.records import Consensus, Tier, Verdict

MAX_ROUNDS = 3
_ORDER = (Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER)


@dataclass(frozen=True)
class RoundResult:
    tier: Tier
    verdict: Verdict | None
    """None when the round failed (timeout, HTTP error, unparseable after retry)."""


@dataclass(frozen=True)
class RunTier:
    tier: Tier


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    consensus: Consensus | None = None
    reason: str | None = None


Step = RunTier | Decision


def _failed(result: RoundResult) -> bool:
    return result.verdict is None or result.verdict is Verdict.UNDETERMINED


def _check_history(rounds: Sequence[RoundResult]) -> None:
    if len(rounds) > MAX_ROUNDS:
        raise ValueError(f"at most {MAX_ROUNDS} rounds run, got {len(rounds)}")
    for index, result in enumerate(rounds):
        if result.tier is not _ORDER[index]:
            raise ValueError(
                f"round {index + 1} must be the {_ORDER[index].value} tier, got {result.tier.value}"
            )


def _after_quick(quick: Verdict, *, sensitive: bool, deep_available: bool) -> Step:
    if quick is Verdict.ESCALATE:
        return Decision(Verdict.ESCALATE, reason="the quick judge asked for a human")
    if quick is Verdict.ACCEPT and not sensitive:
        return Decision(Verdict.ACCEPT)
    if deep_available:
        return RunTier(Tier.DEEP)
    if quick is Verdict.ACCEPT:
        return Decision(
            Verdict.ESCALATE,
            reason="sensitive change needs a deep review and no deep judge is available",
        )
    return Decision(quick)


def _after_deep(quick: Verdict, deep: Verdict, *, tiebreaker_available: bool) -> Step:
    if deep is Verdict.ESCALATE:
        return Decision(Verdict.ESCALATE, reason="the deep judge asked for a human")
    if {quick, deep} == {Verdict.ACCEPT, Verdict.REJECT}:
        if tiebreaker_available:
            return RunTier(Tier.TIEBREAKER)
        return Decision(
            Verdict.ESCALATE,
            reason="quick and deep judges disagree (accept vs reject) and no tiebreaker "
            "is available",
        )
    if quick is Verdict.IMPROVE and deep is Verdict.IMPROVE:
        return Decision(
            Verdict.ESCALATE, reason="both quick and deep judges asked for improvements"
        )
    consensus: Consensus | None = "unanimous" if quick is deep else None
    return Decision(deep, consensus=consensus)


def _after_tiebreaker(tiebreaker: Verdict) -> Decision:
    if tiebreaker in (Verdict.ACCEPT, Verdict.REJECT):
        # Quick and deep split accept/reject, so the tiebreaker forms a 2-of-3 majority.
        return Decision(tiebreaker, consensus="majority")
    return Decision(
        Verdict.ESCALATE,
        reason=f"the tiebreaker answered {tiebreaker.value}, not accept or reject",
    )


def next_step(
    rounds: Sequence[RoundResult],
    *,
    sensitive: bool = False,
    available: frozenset[Tier] = frozenset(_ORDER),
) -> Step:
    """What to do after `rounds`: run another tier, or the final decision.

    Raises ValueError when `rounds` is not a history this machine could have produced
    (a tier out of order, or a round after a final decision)."""
    _check_history(rounds)
    for index, result in enumerate(rounds):
        asked = _decide(rounds[:index], sensitive=sensitive, available=available)
        if asked != RunTier(result.tier):
            raise ValueError(
                f"round {index + 1} ({result.tier.value}) was not asked for: after "
                f"{index} round(s) the protocol gives {asked}"
            )
    return _decide(rounds, sensitive=sensitive, available=available)


def _decide(rounds: Sequence[RoundResult], *, sensitive: bool, available: frozenset[Tier]) -> Step:
    if not rounds:
        if Tier.QUICK not in available:
            return Decision(Verdict.UNDETERMINED, reason="no quick judge is configured")
        return RunTier(Tier.QUICK)
    last = rounds[-1]
    if _failed(last):
        return Decision(
            Verdict.UNDETERMINED,
            reason=f"the {last.tier.value} round failed; failing open",
        )
    quick = rounds[0].verdict
    assert quick is not None
    if len(rounds) == 1:
        return _after_quick(quick, sensitive=sensitive, deep_available=Tier.DEEP in available)
    deep = rounds[1].verdict
    assert deep is not None
    if len(rounds) == 2:
        return _after_deep(quick, deep, tiebreaker_available=Tier.TIEBREAKER in available)
    tiebreaker = rounds[2].verdict
    assert tiebreaker is not None
    return _after_tiebreaker(tiebreaker)
