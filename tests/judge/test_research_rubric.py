"""The research rubric (`bot/judge/rubrics/research.py`): every score combination, with and
without unsupported claims, decided from the scores and never from the model's label."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from bot.judge.engine.judgment import go_no_go
from bot.judge.records import RoundRecord, RubricName, Tier, Verdict
from bot.judge.rubrics import ContentThresholds, get_rubric
from bot.judge.rubrics.parsing import ParseError, parse_answer
from bot.judge.rubrics.research import (
    RESEARCH_DIMENSIONS,
    ResearchRubric,
    ResearchThresholds,
    research_verdict,
)

ALL_COMBOS = list(itertools.product(range(1, 6), repeat=4))


def answer(scores: tuple[float, ...], **extra: Any) -> dict[str, Any]:
    return {"scores": dict(zip(RESEARCH_DIMENSIONS, scores, strict=True)), **extra}


def research_oracle(scores: tuple[int, ...], unsupported: bool) -> str:
    """Independent reading of the table, in integer arithmetic."""
    if min(scores) < 2:
        return "reject"
    # average >= 3.5  <=>  2 * sum >= 7 * n
    if min(scores) >= 3 and 2 * sum(scores) >= 7 * len(scores) and not unsupported:
        return "accept"
    return "improve"


def test_the_table_is_every_combination() -> None:
    assert len(ALL_COMBOS) == 625
    outcomes = {research_oracle(c, u) for c in ALL_COMBOS for u in (False, True)}
    assert outcomes == {"accept", "improve", "reject"}


@pytest.mark.parametrize("unsupported", [False, True], ids=["supported", "unsupported"])
@pytest.mark.parametrize("combo", ALL_COMBOS, ids=lambda c: "-".join(map(str, c)))
def test_verdict_matches_oracle(combo: tuple[int, ...], unsupported: bool) -> None:
    """decide() agrees with the oracle for all 625 score combinations, both ways."""
    rubric = ResearchRubric()
    claims = ["'X halves Y' cites a study of Z"] if unsupported else []
    parsed = rubric.parse(answer(combo, unsupported_claims=claims))
    assert rubric.decide(parsed).value == research_oracle(combo, unsupported)


@pytest.mark.parametrize(
    ("scores", "unsupported", "expected"),
    [
        ((3, 4, 4, 3), 0, Verdict.ACCEPT),  # average exactly 3.5
        ((3, 3, 4, 3), 0, Verdict.IMPROVE),  # 3.25
        ((5, 5, 5, 5), 1, Verdict.IMPROVE),  # an unsupported claim blocks accept
        ((2, 5, 5, 5), 0, Verdict.IMPROVE),
        ((1, 5, 5, 5), 0, Verdict.REJECT),
        ((1, 5, 5, 5), 2, Verdict.REJECT),
        ((2, 2, 2, 2), 3, Verdict.IMPROVE),  # unsupported claims alone never reject
    ],
)
def test_named_boundaries(scores: tuple[int, ...], unsupported: int, expected: Verdict) -> None:
    named = dict(zip(RESEARCH_DIMENSIONS, scores, strict=True))
    assert research_verdict(named, unsupported) is expected


def test_thresholds_are_configurable_and_validated() -> None:
    lenient = ResearchThresholds(unsupported_claims_block_accept=False)
    scores = dict(zip(RESEARCH_DIMENSIONS, (4, 4, 4, 4), strict=True))
    assert research_verdict(scores, 2, lenient) is Verdict.ACCEPT
    strict = ResearchThresholds(accept_min=4, accept_average=4.5)
    assert research_verdict(scores, 0, strict) is Verdict.IMPROVE
    with pytest.raises(ValueError):
        ResearchThresholds(reject_below=4, accept_min=3)
    with pytest.raises(ValueError):
        ResearchThresholds(accept_average=6)
    with pytest.raises(ValueError):
        research_verdict({}, 0)


def test_model_label_is_recorded_but_never_decides() -> None:
    rubric = ResearchRubric()
    parsed = rubric.parse(answer((1, 5, 5, 5), verdict="accept"))
    assert parsed.model_verdict == "accept"
    assert rubric.decide(parsed) is Verdict.REJECT


def test_parse_reads_scores_reasoning_and_claims() -> None:
    rubric = ResearchRubric()
    parsed = rubric.parse(
        {
            "Support": "4",
            "sourcing": 4,
            "balance": 3,
            "calibration": 5,
            "average": 9,
            "reasoning": " fine ",
            "Unsupported Claims": ["claim 2"],
        }
    )
    assert parsed.scores == {"support": 4, "sourcing": 4, "balance": 3, "calibration": 5}
    assert parsed.average == 4.0
    assert parsed.extra == {
        "unsupported_claims": ["claim 2"],
        "reported_average": 9.0,
        "average_recomputed": True,
    }
    assert parsed.reasoning == "fine"
    # without improvements of its own, the unsupported claims are what to improve
    assert parsed.improvements == ["support or remove the claim: claim 2"]
    given = rubric.parse(answer((4, 4, 4, 4), improvements=["cite the trial"]))
    assert given.improvements == ["cite the trial"] and given.extra["unsupported_claims"] == []


@pytest.mark.parametrize(
    "reply",
    [
        answer((4, 4, 4, 6)),
        answer((4, 4, 4, 3.5)),
        {"scores": {"support": 4, "sourcing": 4, "balance": 4}},
        answer((4, 4, 4, 4), unsupported_claims={"a": 1}),
    ],
)
def test_parse_refuses_what_it_cannot_trust(reply: dict[str, Any]) -> None:
    with pytest.raises(ParseError):
        ResearchRubric().parse(reply)


def test_parse_answer_finds_the_reply_in_prose() -> None:
    body = '{"scores": {"support": 4, "sourcing": 4, "balance": 4, "calibration": 4}}'
    text = f"Here: ```json\n{body}\n```"
    parsed = parse_answer(text, ResearchRubric())
    assert ResearchRubric().decide(parsed) is Verdict.ACCEPT


def test_schema_accepts_what_parse_accepts() -> None:
    sample = {
        "scores": {"support": 4, "sourcing": 4, "balance": 4, "calibration": 5},
        "average": 4.25,
        "verdict": "accept",
        "reasoning": "ok",
        "unsupported_claims": [],
        "improvements": [],
    }
    rubric = ResearchRubric()
    schema = rubric.response_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(sample, schema)
    assert rubric.decide(rubric.parse(sample)) is Verdict.ACCEPT


def test_instructions_carry_the_thresholds_and_the_format() -> None:
    text = ResearchRubric(ResearchThresholds(accept_average=4.0, reject_below=1)).instructions()
    assert "average >= 4.0" in text and "any dimension < 1" in text
    assert "unsupported_claims" in text and "cannot open the links" in text
    for dimension in RESEARCH_DIMENSIONS:
        assert f"| {dimension} |" in text


def test_get_rubric_builds_it_and_refuses_other_thresholds() -> None:
    rubric = get_rubric("research", ResearchThresholds(go_min=4))
    assert isinstance(rubric, ResearchRubric) and rubric.thresholds.go_min == 4
    assert rubric.name is RubricName.RESEARCH and rubric.prompt_version == "research/1"
    with pytest.raises(TypeError):
        get_rubric(RubricName.RESEARCH, ContentThresholds())


def deciding(scores: tuple[int, ...], unsupported: list[str]) -> RoundRecord:
    rubric = ResearchRubric()
    parsed = rubric.parse(answer(scores, unsupported_claims=unsupported))
    return RoundRecord(
        round=1,
        judge_tier=Tier.QUICK,
        model="m",
        family="f",
        verdict=rubric.decide(parsed),
        scores=parsed.scores,
        extra=parsed.extra,
    )


@pytest.mark.parametrize(
    ("scores", "unsupported", "final", "label"),
    [
        ((3, 3, 3, 3), [], Verdict.IMPROVE, "GO"),
        ((4, 4, 4, 4), ["c"], Verdict.IMPROVE, "GO"),
        ((2, 4, 4, 4), [], Verdict.IMPROVE, "NO-GO"),
        ((4, 4, 4, 4), [], Verdict.ACCEPT, "GO"),
        ((1, 4, 4, 4), [], Verdict.REJECT, "NO-GO"),
    ],
)
def test_go_no_go_reads_the_scores(
    scores: tuple[int, ...], unsupported: list[str], final: Verdict, label: str
) -> None:
    """Like content's: GO when every score >= 3, whatever else the judge listed."""
    rounds = [deciding(scores, unsupported)]
    assert go_no_go(RubricName.RESEARCH, final, rounds) == label
