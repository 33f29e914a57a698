"""Earlier verdicts on the same pull request, as the judges read them. Pure.

The audit log holds a record for every judged head of a pull request (task
`owner/repo#N`). For the head judged now, the judges of each rubric are shown the last
record of up to `EARLIER_SHAS` earlier heads judged by that rubric, newest first, with
what they found missing or to improve: the completion judge then judges
`forward_progress` against it and says whether this push addressed it (seed 003).
Records without findings (an accept, a decision nobody judged) and human overrides say
nothing to address and are left out; so is any record that no longer reads as one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from bot.judge.engine.review_context import EarlierVerdict
from bot.judge.records import RubricName, VerdictRecord, deciding_round

EARLIER_SHAS = 3
EARLIER_REASONING_LIMIT = 300


def earlier_verdicts(
    records: Sequence[Mapping[str, Any]], head_sha: str, rubric: RubricName
) -> list[EarlierVerdict]:
    """`records` oldest first (as storage lists them)."""
    latest: dict[str, VerdictRecord] = {}
    for raw in records:
        try:
            record = VerdictRecord.model_validate(raw)
        except ValidationError:
            continue
        if record.rubric is not rubric or not record.head_sha or record.head_sha == head_sha:
            continue
        latest.pop(record.head_sha, None)
        latest[record.head_sha] = record
    shown: list[EarlierVerdict] = []
    for record in reversed(latest.values()):
        findings = left_to_address(record)
        if record.human_override or not findings:
            continue
        shown.append(
            EarlierVerdict(
                head_sha=str(record.head_sha),
                decision=record.final_decision.value,
                findings=findings,
                reasoning=" ".join(record.reasoning.split())[:EARLIER_REASONING_LIMIT],
            )
        )
    return shown[:EARLIER_SHAS]


def left_to_address(record: VerdictRecord) -> list[str]:
    """What a record found missing or to improve: the deciding judge's missing items and
    improvements, then the hard mechanical findings, each once."""
    found: list[str] = []
    deciding = deciding_round(record.previous_rounds)
    if deciding is not None:
        missing = deciding.extra.get("missing_items")
        found += [str(item) for item in missing or () if isinstance(item, str)]
        found += deciding.improvements
    found += [f"{f.path}: {f.message}" for f in record.mechanical_findings if f.severity == "hard"]
    return [item for item in dict.fromkeys(found) if item.strip()]
