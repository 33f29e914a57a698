"""Choosing a rubric (`get_rubric`) and what every rubric offers the protocol: instructions,
a response schema that agrees with parsing, and thresholds of its own kind.

Each rubric's verdicts are tested in test_content_rubric.py, test_code_rubric.py and
test_completion_rubric.py; what they share in test_rubric_base.py."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from bot.judge.records import RubricName, Verdict
from bot.judge.rubrics import (
    CodeRubric,
    CodeThresholds,
    CompletionThresholds,
    ContentRubric,
    ContentThresholds,
    get_rubric,
)
from tests.support.rubric_helpers import completion


@pytest.mark.parametrize("name", list(RubricName))
def test_get_rubric_and_protocol_surface(name: RubricName) -> None:
    """Each rubric has instructions, a valid response schema, and a prompt version."""
    rubric = get_rubric(name)
    assert rubric.name is name
    assert get_rubric(name.value).name is name
    assert rubric.prompt_version.startswith(name.value + "/")
    assert "JSON" in rubric.instructions()
    schema = rubric.response_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])


def test_response_schemas_accept_what_parse_accepts() -> None:
    """A reply valid under the structured-output schema parses and decides."""
    samples: dict[RubricName, dict[str, Any]] = {
        RubricName.CONTENT: {
            "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
            "average": 4.33,
            "verdict": "accept",
            "reasoning": "ok",
            "improvements": [],
        },
        RubricName.CODE: {
            "verdict": "pass",
            "score": 0.8,
            "dimensions": {
                "correctness": 0.8,
                "scope_adherence": 0.8,
                "code_quality": 0.8,
                "completeness": 0.8,
            },
            "issues": [],
            "summary": "ok",
            "improvements": [],
            "confidence": "high",
        },
        RubricName.COMPLETION: completion(**{"pass": True, "convergence_estimate": None}),
    }
    for name, sample in samples.items():
        rubric = get_rubric(name)
        jsonschema.validate(sample, rubric.response_schema())
        assert rubric.decide(rubric.parse(sample)) is Verdict.ACCEPT


def test_instructions_reflect_thresholds() -> None:
    text = ContentRubric(ContentThresholds(accept_average=4.0)).instructions()
    assert "average >= 4.0" in text
    assert "0.8" in CodeRubric(CodeThresholds(pass_min=0.8)).instructions()


@pytest.mark.parametrize(
    ("name", "thresholds"),
    [
        (RubricName.CONTENT, CodeThresholds()),
        (RubricName.CODE, CompletionThresholds()),
        (RubricName.COMPLETION, ContentThresholds()),
    ],
)
def test_get_rubric_refuses_mismatched_thresholds(name: RubricName, thresholds: Any) -> None:
    with pytest.raises(TypeError):
        get_rubric(name, thresholds)


def test_get_rubric_refuses_unknown_name() -> None:
    with pytest.raises(ValueError):
        get_rubric("vibes")
