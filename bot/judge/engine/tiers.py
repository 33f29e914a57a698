"""The tiered judging protocol as a pure state machine.

`next_step(rounds, sensitive=..., available=..., whole=..., unseated=...)` looks at the
rounds run so far (each a tier, the verdict its scores gave, or None when the round
failed, and `whole`: whether that judge was sent every judged file in full) and returns
either `RunTier(tier)` or a `Decision(verdict, consensus, reason)`. The engine loops:
run the tier, append the result, ask again. At most three rounds ever run.

    quick ── accept, whole view ──────────────────────► ACCEPT
      │ ── accept needing a second look (sensitive, a partial view, or deep
      │      unseated by four-eyes):
      │        deep seated and reads everything ──────► deep
      │        partial view, no deep could read it all ► UNDETERMINED (partial-view)
      │        otherwise ─────────────────────────────► ESCALATE
      │ ── improve / reject ──► deep (not seated: quick's verdict stands)
      │ ── escalate ─────────────────────────────────► ESCALATE
      │ ── failed ───────────────────────────────────► UNDETERMINED (fail open)
    deep (after quick Q)
      Q=accept  D=accept  ► ACCEPT (unanimous)      Q=accept D=improve ► IMPROVE
      Q=improve D=accept  ► ACCEPT                  Q=improve D=improve ► ESCALATE
      Q=improve D=reject  ► REJECT                  Q=reject D=improve ► IMPROVE
      Q=reject  D=reject  ► REJECT (unanimous)
      Q=accept  D=reject or Q=reject D=accept ► tiebreaker (none: ESCALATE), except
        that an accept from a partial view against a whole-view reject ► REJECT
      D=accept from a partial view (after quick improve) ► UNDETERMINED (partial-view)
      D=escalate ► ESCALATE;  D failed ► UNDETERMINED
    tiebreaker: reject ► REJECT (majority); accept ► ACCEPT (majority) when the
                tiebreaker and the judge it sided with both read everything, else
                UNDETERMINED (partial-view); anything else ► ESCALATE;
                failed ► UNDETERMINED

An accept counts only when every judge whose accept forms the decision read every
judged file in full: quick alone; deep, alone or unanimous with quick (deep's whole
view is what makes it an accept); or the tiebreaker and the judge it sided with. An
accept nobody seated can make whole is refused, not taken: the verdict is undetermined
and `Decision.mode` is `PARTIAL_VIEW`. Rejects and improves from a partial view decide
as before (a quick reject already goes to deep). A model whose answer can no longer
change the outcome is not asked: a partial quick accept with no deep judge that reads
everything is refused at once; the deep judge is asked whenever its whole view could
make the accept valid.

Readings of the seeds this encodes (docs/judging.md gives the reasons):
- A quick reject is not final: the quick judge sees truncated content, and the seed
  lists "quick reject + deep accept -> tiebreaker", which needs the deep round.
- The deeper judge sees the full content, so when the two do not split accept vs
  reject, deep's verdict stands; two "improve" verdicts are ambiguous and go to a human.
- A failed round never rejects: it ends the protocol as undetermined.
- Missing tiers: `available` holds the tiers that can run (configured and seated),
  `unseated` the configured ones the four-eyes rule left empty for this change, and
  `whole` the configured tiers whose budget holds every judged file. Without deep,
  quick's reject or improve is final; a split without a tiebreaker escalates. A tier
  never configured changes nothing else. A deep tier unseated by authorship does:
  trailers may exclude a family but never make the decision more lenient, so a quick
  accept then needs the second look a sensitive change gets and escalates.

`Decision.missing` names the tier whose absence decided it, so the engine can add the
four-eyes cause when that tier was unseated rather than never configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.records import Consensus, Tier, Verdict

MAX_ROUNDS = 3
_ORDER = (Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER)
PROTOCOL_VERSION = "tiers/2"
"""Part of the verdict-cache key: a decision cached under other rules must not answer."""
PARTIAL_VIEW = "partial-view"
"""The record's mode when an accept was refused because nobody read everything
(bot.judging.conclusion's `Cause.PARTIAL_VIEW`)."""


@dataclass(frozen=True)
class RoundResult:
    tier: Tier
    verdict: Verdict | None
    """None when the round failed (timeout, HTTP error, unparseable after retry)."""
    whole: bool = True
    """Whether this judge was sent every judged file in full (task texts, diffs and CI
    excerpts may be cut; they are not what is judged)."""


@dataclass(frozen=True)
class RunTier:
    tier: Tier


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    consensus: Consensus | None = None
    reason: str | None = None
    mode: str | None = None
    """Set when a rule refused the judges' accept: the record's mode (`PARTIAL_VIEW`)."""
    missing: Tier | None = None
    """The tier whose absence decided this (not configured, or unseated)."""


Step = RunTier | Decision


@dataclass(frozen=True)
class _Panel:
    """Who can judge this change, and who reads all of it."""

    sensitive: bool
    available: frozenset[Tier]
    whole: frozenset[Tier]
    unseated: frozenset[Tier]

    def reads_all(self, tier: Tier) -> bool:
        return tier in self.available and tier in self.whole


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


def _partial_view(whose: str) -> Decision:
    return Decision(
        Verdict.UNDETERMINED,
        reason=f"partial view: {whose} rests on a judge that did not read every file in "
        "full, and no judge that could still run reads them all; an accept from a partial "
        "view is not an accept",
        mode=PARTIAL_VIEW,
    )


def _after_quick(quick: RoundResult, panel: _Panel) -> Step:
    if quick.verdict is Verdict.ESCALATE:
        return Decision(Verdict.ESCALATE, reason="the quick judge asked for a human")
    if quick.verdict is Verdict.ACCEPT:
        return _quick_accept(quick.whole, panel)
    if Tier.DEEP in panel.available:
        return RunTier(Tier.DEEP)
    assert quick.verdict is not None
    return Decision(quick.verdict, missing=Tier.DEEP)


def _quick_accept(whole: bool, panel: _Panel) -> Step:
    unseated = Tier.DEEP in panel.unseated
    if whole and not panel.sensitive and not unseated:
        return Decision(Verdict.ACCEPT)
    if panel.reads_all(Tier.DEEP):
        return RunTier(Tier.DEEP)
    # Refused as a partial view only when no configured deep judge could have read it
    # all; when authorship unseated one that could, four-eyes is the cause.
    if not whole and not (unseated and Tier.DEEP in panel.whole):
        return _partial_view("the quick judge's accept")
    if unseated:
        return Decision(
            Verdict.ESCALATE,
            reason="four-eyes: the change's authors unseated the deep judge, so the quick "
            "accept needs the second look a sensitive change gets, and no deep judge is "
            "available",
            missing=Tier.DEEP,
        )
    if Tier.DEEP in panel.available:
        return Decision(
            Verdict.ESCALATE,
            reason="sensitive change needs a deep review and the deep judge cannot read "
            "every file in full",
        )
    return Decision(
        Verdict.ESCALATE,
        reason="sensitive change needs a deep review and no deep judge is available",
        missing=Tier.DEEP,
    )


def _after_deep(quick: RoundResult, deep: RoundResult, panel: _Panel) -> Step:
    q, d = quick.verdict, deep.verdict
    assert q is not None and d is not None
    if d is Verdict.ESCALATE:
        return Decision(Verdict.ESCALATE, reason="the deep judge asked for a human")
    if {q, d} == {Verdict.ACCEPT, Verdict.REJECT}:
        return _split(quick, deep, panel)
    if q is Verdict.IMPROVE and d is Verdict.IMPROVE:
        return Decision(
            Verdict.ESCALATE, reason="both quick and deep judges asked for improvements"
        )
    if d is Verdict.ACCEPT and not deep.whole:
        return _partial_view("the deep judge's accept")
    consensus: Consensus | None = "unanimous" if q is d else None
    return Decision(d, consensus=consensus)


def _split(quick: RoundResult, deep: RoundResult, panel: _Panel) -> Step:
    accepted, rejected = (quick, deep) if quick.verdict is Verdict.ACCEPT else (deep, quick)
    if not accepted.whole and rejected.whole:
        # An accept from a partial view is no vote: the one judge who read everything
        # rejected, and no tiebreaker could side with the accept.
        return Decision(Verdict.REJECT)
    # Asked even when its accept could not count (nobody read everything): its reject
    # still decides.
    if Tier.TIEBREAKER in panel.available:
        return RunTier(Tier.TIEBREAKER)
    return Decision(
        Verdict.ESCALATE,
        reason="quick and deep judges disagree (accept vs reject) and no tiebreaker is available",
        missing=Tier.TIEBREAKER,
    )


def _after_tiebreaker(quick: RoundResult, deep: RoundResult, tiebreaker: RoundResult) -> Step:
    verdict = tiebreaker.verdict
    assert verdict is not None
    # Quick and deep split accept/reject, so the tiebreaker forms a 2-of-3 majority.
    if verdict is Verdict.REJECT:
        return Decision(verdict, consensus="majority")
    if verdict is Verdict.ACCEPT:
        ally = quick if quick.verdict is Verdict.ACCEPT else deep
        if tiebreaker.whole and ally.whole:
            return Decision(verdict, consensus="majority")
        return _partial_view("the tiebreaker's majority accept")
    return Decision(
        Verdict.ESCALATE,
        reason=f"the tiebreaker answered {verdict.value}, not accept or reject",
    )


def next_step(
    rounds: Sequence[RoundResult],
    *,
    sensitive: bool = False,
    available: frozenset[Tier] = frozenset(_ORDER),
    whole: frozenset[Tier] = frozenset(_ORDER),
    unseated: frozenset[Tier] = frozenset(),
) -> Step:
    """What to do after `rounds`: run another tier, or the final decision.

    `available`: the tiers that can run (configured and seated); `whole`: the tiers
    whose budget holds every judged file (the engine works it out from the prompt
    each would be sent); `unseated`: configured tiers the four-eyes rule left empty.

    Raises ValueError when `rounds` is not a history this machine could have produced
    (a tier out of order, or a round after a final decision)."""
    _check_history(rounds)
    panel = _Panel(sensitive=sensitive, available=available, whole=whole, unseated=unseated)
    for index, result in enumerate(rounds):
        asked = _decide(rounds[:index], panel)
        if asked != RunTier(result.tier):
            raise ValueError(
                f"round {index + 1} ({result.tier.value}) was not asked for: after "
                f"{index} round(s) the protocol gives {asked}"
            )
    return _decide(rounds, panel)


def _decide(rounds: Sequence[RoundResult], panel: _Panel) -> Step:
    if not rounds:
        if Tier.QUICK not in panel.available:
            return Decision(Verdict.UNDETERMINED, reason="no quick judge is configured")
        return RunTier(Tier.QUICK)
    last = rounds[-1]
    if _failed(last):
        return Decision(
            Verdict.UNDETERMINED,
            reason=f"the {last.tier.value} round failed; failing open",
        )
    if len(rounds) == 1:
        return _after_quick(rounds[0], panel)
    if len(rounds) == 2:
        return _after_deep(rounds[0], rounds[1], panel)
    return _after_tiebreaker(rounds[0], rounds[1], rounds[2])
