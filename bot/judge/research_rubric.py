"""The research rubric (seed 004): whether a research report's evidence carries its claims.

Counting is not the judge's job: before any model is asked, bot/judge/research_claims.py
has counted each claim's sources, their domains, its counter-evidence and the stated
confidence against the JUDGE_RESEARCH_* thresholds, and a shortfall there rejects without
a call. The judge scores what counting cannot see, four dimensions in whole scores 1-5:

    support      the cited evidence, as the report presents it, backs each claim as stated
    sourcing     the sources are credible and independent of each other
    balance      counter-evidence and limitations are weighed fairly
    calibration  the claims are specific and the stated confidence fits the evidence

and lists the claims its evidence does not support. The verdict table is in
bot/judge/rubrics.py: content's table over four dimensions, and an unsupported claim
keeps a report from accept (improve), as a major issue does for code. The GO label reads
the scores only (every score >= `go_min`), like content's.

The judge cannot open the links (nothing it is shown leaves the prompt), so it is told to
judge from what the report says about each source, not to guess at pages it has not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from bot.judge.parsing import (
    model_label,
    normalized,
    raw_scores,
    reconcile_average,
    string_list,
    text_field,
    to_int_score,
)
from bot.judge.records import GoNoGo, RubricName, Verdict
from bot.judge.rubric_base import (
    STRINGS_SCHEMA,
    FrozenModel,
    RubricAnswer,
    go_no_go,
    mean_at_least,
    object_schema,
)

RESEARCH_DIMENSIONS = ("support", "sourcing", "balance", "calibration")


class ResearchThresholds(FrozenModel):
    accept_min: int = Field(default=3, ge=1, le=5)
    accept_average: float = Field(default=3.5, ge=1, le=5)
    reject_below: int = Field(default=2, ge=1, le=5)
    go_min: int = Field(default=3, ge=1, le=5)
    unsupported_claims_block_accept: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> ResearchThresholds:
        if self.reject_below > self.accept_min:
            raise ValueError("reject_below must not exceed accept_min")
        return self


def research_verdict(
    scores: Mapping[str, float], unsupported: int, t: ResearchThresholds | None = None
) -> Verdict:
    """`unsupported` is how many claims the judge found its evidence does not support."""
    t = t or ResearchThresholds()
    values = list(scores.values())
    if not values:
        raise ValueError("no scores")
    if any(v < t.reject_below for v in values):
        return Verdict.REJECT
    blocked = t.unsupported_claims_block_accept and unsupported > 0
    passing = all(v >= t.accept_min for v in values) and mean_at_least(values, t.accept_average)
    return Verdict.ACCEPT if passing and not blocked else Verdict.IMPROVE


_RESEARCH_TEXT = """\
You are judging a research report: claims, the evidence cited for each, counter-evidence \
and a stated confidence. The links, source domains, counter-evidence and confidence were \
already counted mechanically against the repository's thresholds; do not count them again. \
Judge what counting cannot see. You cannot open the links: judge from what the report says \
each source found (titles, quotations, figures, summaries) and from whether a source of \
that kind could establish the claim; do not guess at pages you have not been shown.

Score each dimension as a whole number 1-5:

| Dimension | Question | Criteria |
|-----------|----------|----------|
| support | Does the cited evidence, as presented, back each claim as stated? | No claim \
goes beyond its sources; findings are not misattributed; quoted figures match the claim |
| sourcing | Are the sources credible and independent? | Primary or authoritative \
sources; not one origin repeated through aggregators; recent where it matters |
| balance | Is counter-evidence weighed fairly? | Contradicting findings presented \
honestly and answered; limitations stated; no cherry-picking |
| calibration | Do the claims and the stated confidence fit the evidence? | Specific, \
testable claims; confidence neither above nor far below what the evidence carries |

Scale: 1 poor (major issues, blocks use); 2 below standard (significant gaps); 3 adequate \
(meets the minimum bar); 4 good (clear, useful, few issues); 5 excellent (exemplary).

List in unsupported_claims every claim (a short quotation of it) whose cited evidence \
does not support it as stated. Verdict labels: accept when every dimension >= \
{accept_min}, the average >= {accept_average} and no claim is unsupported; reject when \
any dimension < {reject_below}; improve otherwise. List concrete improvements whenever a \
dimension is below 5.

Reply with one JSON object and nothing else:
{{"scores": {{"support": n, "sourcing": n, "balance": n, "calibration": n}}, "average": n, \
"verdict": "accept|improve|reject", "reasoning": "...", "unsupported_claims": ["..."], \
"improvements": ["..."]}}"""


class ResearchRubric:
    name: RubricName = RubricName.RESEARCH
    prompt_version: str = "research/1"
    dimensions: tuple[str, ...] = RESEARCH_DIMENSIONS
    verdict_keys: frozenset[str] = frozenset({"scores", "verdict", *RESEARCH_DIMENSIONS})

    def __init__(self, thresholds: ResearchThresholds | None = None) -> None:
        self.thresholds = thresholds or ResearchThresholds()

    def instructions(self) -> str:
        t = self.thresholds
        return _RESEARCH_TEXT.format(
            accept_min=t.accept_min, accept_average=t.accept_average, reject_below=t.reject_below
        )

    def response_schema(self) -> dict[str, Any]:
        score = {"type": "integer", "minimum": 1, "maximum": 5}
        return object_schema(
            {
                "scores": object_schema({d: score for d in self.dimensions}),
                "average": {"type": "number"},
                "verdict": {"type": "string", "enum": ["accept", "improve", "reject"]},
                "reasoning": {"type": "string"},
                "unsupported_claims": STRINGS_SCHEMA,
                "improvements": STRINGS_SCHEMA,
            }
        )

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer:
        raw = raw_scores(obj, self.dimensions)
        scores: dict[str, float] = {d: to_int_score(v, d, 1, 5) for d, v in raw.items()}
        unsupported = string_list(obj, "unsupported_claims", "unsupported")
        extra: dict[str, Any] = {"unsupported_claims": unsupported}
        top = normalized(obj)
        computed = round(sum(scores.values()) / len(scores), 2)
        average = reconcile_average(top.get("average", top.get("avg")), computed, extra)
        improvements = string_list(obj, "improvements", "revision_suggestions")
        if not improvements:
            improvements = [f"support or remove the claim: {claim}" for claim in unsupported]
        return RubricAnswer(
            scores=scores,
            average=average,
            reasoning=text_field(obj, "reasoning", "reason", "findings", "summary"),
            improvements=improvements,
            model_verdict=model_label(obj, "verdict"),
            extra=extra,
        )

    def decide(self, answer: RubricAnswer) -> Verdict:
        unsupported = answer.extra.get("unsupported_claims") or []
        return research_verdict(answer.scores, len(unsupported), self.thresholds)

    def go_no_go(self, answer: RubricAnswer) -> GoNoGo:
        return go_no_go(answer.scores, self.thresholds.go_min)
