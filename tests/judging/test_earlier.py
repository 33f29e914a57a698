"""Earlier verdicts on the same pull request: the last record of each earlier head, newest
first, with what it found missing or to improve."""

from __future__ import annotations

from typing import Any

from bot.judge.engine.review_context import EarlierVerdict
from bot.judge.records import Finding, RubricName, Verdict, VerdictRecord
from bot.judging.earlier import EARLIER_SHAS, earlier_verdicts, left_to_address
from tests.support.verdict_builders import make_record, make_round

NOW = "f" * 40


def stored(sha: str, improvements: list[str], **more: Any) -> dict[str, Any]:
    record = make_record(
        head_sha=sha,
        final_decision=more.pop("final_decision", Verdict.IMPROVE),
        previous_rounds=[make_round(improvements=improvements, **more.pop("round", {}))],
        **more,
    )
    return record.model_dump(mode="json")


def test_newest_first_one_per_head_and_never_the_head_judged_now() -> None:
    records = [
        stored("a" * 40, ["first try"]),
        stored("b" * 40, ["second try"]),
        stored("a" * 40, ["first, judged again"]),
        stored(NOW, ["now"]),
    ]
    found = earlier_verdicts(records, NOW, RubricName.CONTENT)
    assert [(v.head_sha[0], v.findings) for v in found] == [
        ("a", ["first, judged again"]),
        ("b", ["second try"]),
    ]
    assert found[0] == EarlierVerdict(
        head_sha="a" * 40,
        decision="improve",
        findings=["first, judged again"],
        reasoning="Accurate and actionable.",
    )


def test_only_the_same_rubric_and_only_records_with_something_to_address() -> None:
    records = [
        stored("a" * 40, ["code finding"], rubric=RubricName.CODE),
        stored("b" * 40, [], final_decision=Verdict.ACCEPT),
        stored("c" * 40, ["overridden"], human_override=True),
        {"not": "a record"},
        stored("d" * 40, ["kept"]),
    ]
    found = earlier_verdicts(records, NOW, RubricName.CONTENT)
    assert [v.head_sha[0] for v in found] == ["d"]


def test_at_most_so_many_earlier_heads() -> None:
    records = [stored(f"{n:040d}", [f"finding {n}"]) for n in range(EARLIER_SHAS + 2)]
    found = earlier_verdicts(records, NOW, RubricName.CONTENT)
    assert len(found) == EARLIER_SHAS
    assert found[0].findings == [f"finding {EARLIER_SHAS + 1}"]


def test_findings_are_missing_items_improvements_and_hard_mechanical_findings() -> None:
    record = VerdictRecord.model_validate(
        stored(
            "a" * 40,
            ["add tests", "handle errors"],
            round={"extra": {"missing_items": ["add tests", 7, "docs"]}},
            mechanical_findings=[
                Finding(
                    source="mechanical", kind="k", severity="hard", path="a.json", message="bad"
                ),
                Finding(source="mechanical", kind="k", severity="soft", path="b.md", message="meh"),
            ],
        )
    )
    assert left_to_address(record) == ["add tests", "docs", "handle errors", "a.json: bad"]
    assert left_to_address(record.model_copy(update={"previous_rounds": []})) == ["a.json: bad"]
