"""The engine's own decisions about a judgment, and how a decision becomes a record.

The engine (bot/judge/engine/__init__.py) fetches and stores; everything it decides without a
model is a pure function here, so each rule can be read and tested on its own:

    refuse_before_models  a mechanical hard failure rejects; no LLM configured is
                          undetermined (in that order: a credential in the change is a
                          reject even where no model could have looked)
    four_eyes_refusal     no independent quick judge: undetermined before any budget
                          is counted
    admission_refused     a throttle or budget refusal, recorded under its own mode
    with_unseated_reason  a protocol decision caused by an unseated tier names the
                          four-eyes cause too
    with_partial_view_reason  an accept refused because nobody read everything names
                          the longest file, its size and the largest judge budget
    escalate_injection    instructions aimed at the judge turn an accept into escalate
    go_no_go              the phase A/B label (GO, NO-GO, UNDETERMINED): the one rule the
                          App's record and the pre-push hook both use (table below)
    verdict_record        the VerdictRecord for a decision and the rounds that led to it

GO/NO-GO (seed 000: GO when all scores >= 3, NO-GO when any is below, UNDETERMINED when
the judge returned nothing usable or lacks confidence). The first row that applies wins:

    human override              accept GO, reject NO-GO (the human's word is the label)
    final decision reject       NO-GO (the judges, or a mechanical hard failure)
    mode partial-view           UNDETERMINED (an accept refused: nobody read everything,
                                so the scores that accepted describe a part)
    no round answered           UNDETERMINED (not configured, four-eyes, throttle,
                                budget, every round failed)
    otherwise the deciding judgment, the last round that answered (for content and
    code: the last round with scores), read by its rubric (`Rubric.go_no_go`), whatever
    the protocol concluded (accept, improve, escalate, or undetermined because a later
    round failed):
      content     any score < 3 NO-GO, else GO
      code        low confidence UNDETERMINED; any dimension < 0.7 NO-GO, else GO
      completion  (no scores) its answer is accept GO, else NO-GO
      research    any score < 3 NO-GO, else GO (unsupported claims do not change the label)
    and a GO from a judge that was sent only part of some file (the record's `context`)
    is UNDETERMINED: what nobody read cannot pass; its NO-GO stands

Reading the deciding judgment rather than the protocol's verdict is what makes an
escalate block: two judges who both score a document below 3 send it to a human, and
until then the push must not pass as if nobody had objected. The last answer decides
because later tiers see more (quick reads 4000 characters, deep 32000).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.judge.checks.mechanical import has_hard_failure
from bot.judge.engine.seating import Seating
from bot.judge.engine.tiers import PARTIAL_VIEW, Decision
from bot.judge.records import (
    CallStats,
    ContextPiece,
    Finding,
    GoNoGo,
    JudgedFile,
    RoundRecord,
    RubricName,
    Tier,
    Truncation,
    Verdict,
    VerdictRecord,
    deciding_round,
    go_no_go_of,
)
from bot.judge.rubrics import Rubric, RubricAnswer, get_rubric
from bot.judge.rubrics.base import E

NOT_CONFIGURED_NOTE = (
    "no LLM judge is configured (set JUDGE_LLM_BASE_URL or JUDGE_LLM_API_KEY and "
    "JUDGE_QUICK_MODEL); only the mechanical checks ran"
)


@dataclass(frozen=True)
class Settled:
    """A judgment decided without asking a model, and the record's `mode` for it."""

    decision: Decision
    mode: str
    note: str | None = None
    """Why the models did not run, when that is a setup matter the user must fix."""


def refuse_before_models(mechanical: Sequence[Finding], *, configured: bool) -> Settled | None:
    if has_hard_failure(mechanical):
        kinds = sorted({f.kind for f in mechanical if f.severity == "hard"})
        reason = "mechanical hard failure: " + ", ".join(kinds)
        return Settled(Decision(Verdict.REJECT, reason=reason), "mechanical")
    if not configured:
        return Settled(
            Decision(Verdict.UNDETERMINED, reason="model tiers were not run"),
            "unconfigured",
            note=NOT_CONFIGURED_NOTE,
        )
    return None


def four_eyes_refusal(seating: Mapping[Tier, Seating]) -> Settled | None:
    first = seating.get(Tier.QUICK)
    if first is not None and first.seat is None:
        return Settled(Decision(Verdict.UNDETERMINED, reason=first.reason), "four-eyes")
    return None


def admission_refused(reason: str) -> Settled:
    mode = "throttled" if reason.startswith("throttled") else "budget"
    return Settled(Decision(Verdict.UNDETERMINED, reason=reason), mode)


def with_unseated_reason(decision: Decision, seating: Mapping[Tier, Seating]) -> Decision:
    """Add the four-eyes cause when the tier the decision lacked (`Decision.missing`)
    was configured but unseated (the protocol's own reason only says it is missing)."""
    seated = seating.get(decision.missing) if decision.missing is not None else None
    why = seated.reason if seated is not None else None
    if not why:
        return decision
    reason = f"{decision.reason}; {why}" if decision.reason else why
    return replace(decision, reason=reason)


def with_partial_view_reason(
    decision: Decision,
    files: Sequence[JudgedFile],
    budgets: Mapping[Tier, int],
    contexts: Mapping[Tier, str] | None = None,
) -> Decision:
    """Say what nobody could read whole: the longest judged file, its size, and the
    largest budget of the tiers configured (`budgets`: characters per tier), with the
    context it was fitted to (`contexts`: a tier's, in words, when known)."""
    live = sorted((f for f in files if not f.removed), key=lambda f: (-len(f.content), f.path))
    if decision.mode != PARTIAL_VIEW or not live or not budgets:
        return decision
    longest = live[0]
    tier, budget = max(budgets.items(), key=lambda item: item[1])
    detail = (
        f"the longest file, {longest.path}, has {len(longest.content)} characters and the "
        f"largest judge budget is {budget} ({tier.value}, shared with diffs and CI excerpts)"
    )
    fitted = (contexts or {}).get(tier)
    if fitted:
        detail += f", fitted to {fitted}"
    reason = f"{decision.reason}; {detail}" if decision.reason else detail
    return replace(decision, reason=reason)


def escalate_injection(decision: Decision, injection: Sequence[Finding]) -> Decision:
    """A reject or improve stands (the injection did not soften it); only an accept
    needs a human to confirm it was not talked into."""
    if not injection or decision.verdict is not Verdict.ACCEPT:
        return decision
    return Decision(
        Verdict.ESCALATE,
        reason="the content holds instructions aimed at the judge ("
        + ", ".join(sorted({f.kind for f in injection}))
        + "); a human must confirm the accept",
    )


def go_no_go(
    rubric: RubricName,
    final: Verdict,
    rounds: Sequence[RoundRecord],
    *,
    human_override: bool | None = None,
    mode: str | None = None,
    context: Sequence[ContextPiece] = (),
) -> GoNoGo:
    """The phase A/B label of a judgment (table in the module docstring); `mode` and
    `context` are the record's."""
    deciding = deciding_round(rounds)
    if human_override or final is Verdict.REJECT or deciding is None:
        # A human's word, a reject and a decision no judge answered for (which is then
        # undetermined: refused, or every round failed) carry their own label.
        return go_no_go_of(final)
    if mode == PARTIAL_VIEW:
        return "UNDETERMINED"
    reader = get_rubric(rubric)
    label = reader.go_no_go(_answer(reader, deciding))
    if label == "GO" and deciding.judge_tier in cut_tiers(context):
        return "UNDETERMINED"
    return label


def cut_tiers(context: Sequence[ContextPiece]) -> frozenset[Tier]:
    """The tiers that were sent only part of some judged file."""
    return frozenset(
        tier
        for piece in context
        if piece.kind == "file"
        for tier, sent in piece.sent.items()
        if sent < piece.chars
    )


def record_go_no_go(record: VerdictRecord) -> GoNoGo:
    """`go_no_go` of a stored record: what the hook blocks on and what a cached record
    is relabelled with, so a label written under an older rule never decides."""
    return go_no_go(
        record.rubric,
        record.final_decision,
        record.previous_rounds,
        human_override=record.human_override,
        mode=record.mode,
        context=record.context,
    )


def _answer(rubric: Rubric[E], round_: RoundRecord) -> RubricAnswer[E]:
    """A stored round's answer, as `rubric` parsed it."""
    return RubricAnswer(
        scores=dict(round_.scores),
        average=round_.average,
        reasoning=round_.reasoning,
        improvements=list(round_.improvements),
        model_verdict=round_.model_verdict,
        extras=rubric.read_extras(round_.extra),
    )


def verdict_record(
    base: Mapping[str, Any],
    decision: Decision,
    *,
    mode: str,
    rounds: Sequence[RoundRecord] = (),
    calls: Sequence[CallStats] = (),
    truncation: Sequence[Truncation] = (),
    context: Sequence[ContextPiece] = (),
    models_not_run_note: str | None = None,
) -> VerdictRecord:
    """The record: the fields every judgment has (`base`), the last round's answer as
    the headline, and the decision."""
    last = rounds[-1] if rounds else None
    fields: dict[str, Any] = dict(base)
    fields.update(
        model=last.model if last else "",
        mode=mode,
        verdict=(last.verdict or Verdict.UNDETERMINED) if last else decision.verdict,
        scores=dict(last.scores) if last else {},
        average=last.average if last else None,
        reasoning=last.reasoning if last else (decision.reason or ""),
        improvements=list(last.improvements) if last else [],
        round=len(rounds),
        judge_tier=last.judge_tier if last else None,
        previous_rounds=list(rounds),
        consensus=decision.consensus,
        truncation=list(truncation),
        context=list(context),
        calls=list(calls),
        final_decision=decision.verdict,
        go_no_go=go_no_go(base["rubric"], decision.verdict, rounds, mode=mode, context=context),
        reason=decision.reason,
        models_not_run=models_not_run_note is not None,
        models_not_run_note=models_not_run_note,
    )
    return VerdictRecord(**fields)


def settled_record(base: Mapping[str, Any], settled: Settled) -> VerdictRecord:
    return verdict_record(
        base, settled.decision, mode=settled.mode, models_not_run_note=settled.note
    )


def protocol_mode(rounds: Sequence[RoundRecord], decision: Decision | None = None) -> str:
    """The record's mode after the protocol ran: the refusal's own (`Decision.mode`),
    else the tier that spoke last."""
    if decision is not None and decision.mode:
        return decision.mode
    return rounds[-1].judge_tier.value if rounds else "none"


def cacheable(record: VerdictRecord) -> bool:
    # Failures and refusals are not answers about the content: ask again next time.
    # A partial-view refusal is one even where a judge answered: its answer covered a part.
    return (
        record.final_decision is not Verdict.UNDETERMINED
        and record.mode != PARTIAL_VIEW
        and bool(record.previous_rounds)
    )
