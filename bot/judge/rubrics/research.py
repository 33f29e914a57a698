"""The research rubric (seed 004): whether a research report's evidence carries its claims.

Counting is not the judge's job: before any model is asked, bot/judge/checks/research_claims.py
has counted each claim's sources, their domains, its counter-evidence and the stated
confidence against the JUDGE_RESEARCH_* thresholds, and a shortfall there rejects without
a call. The judge scores what counting cannot see, four dimensions in whole scores 1-5:

    support      the cited evidence, as the report presents it, backs each claim as stated
    sourcing     the sources are credible and independent of each other
    balance      counter-evidence and limitations are weighed fairly
    calibration  the claims are specific and the stated confidence fits the evidence

and lists the claims its evidence does not support. The verdict table is in
bot/judge/rubrics/__init__.py: content's table over four dimensions, and an unsupported claim
keeps a report from accept (improve), as a major issue does for code. The GO label reads
the scores only (every score >= `go_min`), like content's.

The judge cannot open the links (nothing it is shown leaves the prompt), so it is told to
judge from what the report says about each source, not to guess at pages it has not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.judge.records import GoNoGo, RubricName, Verdict
from bot.judge.rubrics.base import (
    LIST_ASK,
    STRINGS_SCHEMA,
    TEXT_ASK,
    ContextKind,
    RubricAnswer,
    average_record,
    recorded_average,
    recorded_strings,
    scores_go_no_go,
)
from bot.judge.rubrics.content import (
    ContentThresholds,
    content_verdict,
    scored_answer,
    scored_schema,
)
from bot.judge.rubrics.parsing import string_list

RESEARCH_DIMENSIONS = ("support", "sourcing", "balance", "calibration")
# fmt: off
# (one phrase per line would make the lists hard to read; they are data, not code)
RESEARCH_PHRASES: Mapping[str, tuple[str, ...]] = {
    "support": (
        "support", "unsupported", "backed by", "evidence", "misattribute",
        "beyond the source", "beyond its source",
    ),
    "sourcing": (
        "sourcing", "source", "credible", "credibility", "authoritative", "primary source",
        "independent source", "aggregator", "citation",
    ),
    "balance": (
        "balance", "unbalanced", "counter-evidence", "counter-argument", "one-sided",
        "cherry-pick", "limitation", "contradicting finding", "opposing view",
        "alternative explanation",
    ),
    "calibration": (
        "calibration", "calibrate", "miscalibrate", "confidence", "overconfident",
        "overstate", "hedge", "testable claim", "specific claim", "certainty",
    ),
}
# fmt: on
"""The words a judge's reasoning names each dimension by, in base form, for tagging
(bot/judge/tagging/thesaurus.py reads them from `Rubric.dimension_phrases`): seed 004's criteria."""


class ResearchThresholds(ContentThresholds):
    unsupported_claims_block_accept: bool = True


@dataclass(frozen=True)
class ResearchExtras:
    unsupported_claims: tuple[str, ...]
    """The claims the judge found its cited evidence does not support."""
    reported_average: float | str | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "unsupported_claims": list(self.unsupported_claims),
            **average_record(self.reported_average),
        }

    @classmethod
    def from_record(cls, extra: Mapping[str, Any]) -> ResearchExtras:
        return cls(recorded_strings(extra.get("unsupported_claims")), recorded_average(extra))


def research_verdict(
    scores: Mapping[str, float], unsupported: int, t: ResearchThresholds | None = None
) -> Verdict:
    """`unsupported` is how many claims the judge found its evidence does not support;
    one keeps an otherwise passing report at improve."""
    t = t or ResearchThresholds()
    verdict = content_verdict(scores, t)
    if verdict is Verdict.ACCEPT and t.unsupported_claims_block_accept and unsupported > 0:
        return Verdict.IMPROVE
    return verdict


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

List in unsupported_claims the claims (a short quotation of each) whose cited evidence \
does not support them as stated: {list_ask}, the weakest first. Verdict labels: accept \
when every dimension >= {accept_min}, the average >= {accept_average} and no claim is \
unsupported; reject when any dimension < {reject_below}; improve otherwise. List concrete \
improvements whenever a dimension is below 5: {list_ask}. Keep the reasoning to \
{text_ask}.

Reply with one JSON object and nothing else:
{{"scores": {{"support": n, "sourcing": n, "balance": n, "calibration": n}}, "average": n, \
"verdict": "accept|improve|reject", "reasoning": "...", "unsupported_claims": ["..."], \
"improvements": ["..."]}}"""


class ResearchRubric:
    name: RubricName = RubricName.RESEARCH
    prompt_version: str = "research/1"
    dimensions: tuple[str, ...] = RESEARCH_DIMENSIONS
    context_order: tuple[ContextKind, ...] = ("file", "diff", "ci")
    low_score_below: float | None = ResearchThresholds().accept_min
    dimension_phrases: Mapping[str, tuple[str, ...]] = RESEARCH_PHRASES
    verdict_keys: frozenset[str] = frozenset({"scores", "verdict", *RESEARCH_DIMENSIONS})

    def __init__(self, thresholds: ResearchThresholds | None = None) -> None:
        self.thresholds = thresholds or ResearchThresholds()

    def instructions(self) -> str:
        t = self.thresholds
        return _RESEARCH_TEXT.format(
            accept_min=t.accept_min,
            accept_average=t.accept_average,
            reject_below=t.reject_below,
            list_ask=LIST_ASK,
            text_ask=TEXT_ASK,
        )

    def response_schema(self) -> dict[str, Any]:
        return scored_schema(self.dimensions, {"unsupported_claims": STRINGS_SCHEMA})

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer[ResearchExtras]:
        unsupported = tuple(string_list(obj, "unsupported_claims", "unsupported"))
        answer = scored_answer(
            obj, self.dimensions, lambda reported: ResearchExtras(unsupported, reported)
        )
        if answer.improvements:
            return answer
        return replace(
            answer,
            improvements=[f"support or remove the claim: {claim}" for claim in unsupported],
        )

    def read_extras(self, extra: Mapping[str, Any]) -> ResearchExtras:
        return ResearchExtras.from_record(extra)

    def decide(self, answer: RubricAnswer[ResearchExtras]) -> Verdict:
        unsupported = len(answer.extras.unsupported_claims)
        return research_verdict(answer.scores, unsupported, self.thresholds)

    def go_no_go(self, answer: RubricAnswer[ResearchExtras]) -> GoNoGo:
        return scores_go_no_go(answer.scores, self.thresholds.go_min)
