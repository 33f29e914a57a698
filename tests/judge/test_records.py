"""Verdict records: shape, JSONL round trip, and the published JSON Schema."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from bot.judge.records import (
    CallStats,
    Finding,
    JudgedFile,
    RoundRecord,
    RubricName,
    TaskSpec,
    Tier,
    Truncation,
    Verdict,
    VerdictRecord,
    content_sha256,
    go_no_go_of,
    render_schema,
    verdict_json_schema,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "verdict-schema.json"
WHEN = datetime(2026, 2, 17, 14, 30, tzinfo=UTC)


def make_record(**overrides: Any) -> VerdictRecord:
    """A full record with valid defaults; tests override what they are about."""
    quick = RoundRecord(
        round=1,
        judge_tier=Tier.QUICK,
        model="opencode/gpt-5-nano",
        family="openai",
        verdict=Verdict.IMPROVE,
        model_verdict="accept",
        scores={"semantic": 3, "pragmatic": 3, "syntactic": 4},
        average=3.33,
        reasoning="thin",
        improvements=["add examples"],
    )
    fields: dict[str, Any] = {
        "task_id": "issue-42",
        "model": "opencode/kimi-k2.5-free",
        "mode": "deep",
        "verdict": Verdict.ACCEPT,
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
        "average": 4.33,
        "reasoning": "Justification\nwith a newline",
        "improvements": [],
        "timestamp": WHEN,
        "round": 2,
        "judge_tier": Tier.DEEP,
        "previous_rounds": [quick],
        "consensus": None,
        "human_override": None,
        "rubric": RubricName.CONTENT,
        "prompt_version": "judge/1+content/1",
        "repository": "octo/repo",
        "head_sha": "a" * 40,
        "description": "Evaluate article",
        "files": ["docs/a.md"],
        "content_hashes": {"docs/a.md": content_sha256("hello")},
        "truncation": [
            Truncation(path="docs/a.md", original_chars=9000, kept_chars=4000, tier=Tier.QUICK)
        ],
        "mechanical_findings": [
            Finding(
                source="mechanical",
                kind="todo-marker",
                severity="soft",
                path="docs/a.md",
                line=3,
                message="unfinished-work marker",
            )
        ],
        "injection_findings": [],
        "calls": [
            CallStats(
                tier=Tier.QUICK,
                model="opencode/gpt-5-nano",
                provider="opencode",
                latency_ms=370.5,
                prompt_tokens=1200,
                completion_tokens=80,
                attempts=1,
            )
        ],
        "final_decision": Verdict.ACCEPT,
        "go_no_go": "GO",
        "authoring_families": ["anthropic"],
    }
    fields.update(overrides)
    return VerdictRecord(**fields)


def test_jsonl_is_one_compact_line_and_round_trips() -> None:
    record = make_record()
    line = record.to_jsonl()
    assert "\n" not in line
    assert ", " not in line and '": ' not in line
    assert VerdictRecord.from_jsonl(line) == record


def test_seed_fields_keep_their_shape() -> None:
    """Triage queries written for the seed's records keep working."""
    data = json.loads(make_record().to_jsonl())
    for key in (
        "task_id",
        "model",
        "mode",
        "verdict",
        "scores",
        "average",
        "reasoning",
        "improvements",
        "timestamp",
        "round",
        "judge_tier",
        "previous_rounds",
        "consensus",
        "human_override",
    ):
        assert key in data
    assert data["verdict"] == "accept"
    assert data["timestamp"] == "2026-02-17T14:30:00Z"
    assert data["previous_rounds"][0]["model_verdict"] == "accept"
    assert data["schema_version"] == "1.0.0"


def test_record_validates_against_published_schema() -> None:
    schema = verdict_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for record in (
        make_record(),
        make_record(
            round=0,
            judge_tier=None,
            mode="mechanical",
            model="",
            verdict=Verdict.REJECT,
            final_decision=Verdict.REJECT,
            go_no_go="NO-GO",
            previous_rounds=[],
            calls=[],
        ),
        make_record(
            models_not_run=True,
            models_not_run_note="no LLM configured",
            final_decision=Verdict.UNDETERMINED,
            go_no_go="UNDETERMINED",
            reason="no models",
        ),
    ):
        validator.validate(json.loads(record.to_jsonl()))


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda d: d.update(verdict="maybe"), "verdict enum"),
        (lambda d: d.update(go_no_go="go"), "go/no-go enum"),
        (lambda d: d.update(round=4), "round range"),
        (lambda d: d.update(content_hashes={"a": "xyz"}), "sha256 hex"),
        (lambda d: d.pop("final_decision"), "required"),
        (lambda d: d["previous_rounds"][0].update(round=0), "round record range"),
        (lambda d: d["mechanical_findings"][0].update(severity="medium"), "severity enum"),
    ],
)
def test_schema_rejects_bad_records(mutate: Any, why: str) -> None:
    data = json.loads(make_record().to_jsonl())
    mutate(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, verdict_json_schema())
    with pytest.raises(ValidationError):
        VerdictRecord.model_validate(data)


def test_schema_declares_dialect() -> None:
    schema = verdict_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"


def test_docs_schema_file_is_current() -> None:
    """docs/verdict-schema.json is regenerated with `python -m bot.judge.records`."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema()


def test_module_main_prints_the_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bot.judge.records"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == verdict_json_schema()


def test_naive_timestamp_is_refused() -> None:
    with pytest.raises(ValidationError):
        make_record(timestamp=datetime(2026, 1, 1))  # noqa: DTZ001


def test_non_utc_aware_timestamp_is_kept_aware() -> None:
    tz = timezone(timedelta(hours=2))
    record = make_record(timestamp=datetime(2026, 1, 1, 12, tzinfo=tz))
    assert VerdictRecord.from_jsonl(record.to_jsonl()).timestamp == datetime(
        2026, 1, 1, 10, tzinfo=UTC
    )


def test_round_record_allows_failed_call() -> None:
    failed = RoundRecord(
        round=2, judge_tier=Tier.DEEP, model="m", family="f", error="timeout after retry"
    )
    assert failed.verdict is None and failed.scores == {}


def test_finding_line_is_one_based() -> None:
    with pytest.raises(ValidationError):
        Finding(source="mechanical", kind="k", severity="hard", path="p", line=0, message="m")


def test_records_are_immutable() -> None:
    record = make_record()
    with pytest.raises(ValidationError):
        record.verdict = Verdict.REJECT  # type: ignore[misc]


@pytest.mark.parametrize(
    ("verdict", "label"),
    [
        (Verdict.ACCEPT, "GO"),
        (Verdict.IMPROVE, "NO-GO"),
        (Verdict.REJECT, "NO-GO"),
        (Verdict.ESCALATE, "UNDETERMINED"),
        (Verdict.UNDETERMINED, "UNDETERMINED"),
    ],
)
def test_go_no_go_of_protocol_outcome(verdict: Verdict, label: str) -> None:
    """Uncertainty never blocks a push (seed 000 phase B)."""
    assert go_no_go_of(verdict) == label


def test_input_types() -> None:
    f = JudgedFile(path="a.md", content="x", status="removed")
    assert f.removed and f.added_lines is None
    assert not JudgedFile(path="a.md", content="x").removed
    task = TaskSpec(task_id="t")
    assert task.directives == [] and task.acceptance == ""


def test_content_sha256() -> None:
    assert content_sha256("") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
