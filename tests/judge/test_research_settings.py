"""The research thresholds (`bot/judge/rubrics/research_settings.py`): JUDGE_RESEARCH_* through the
one settings loader, a repository's `research:` overrides, and the value they make."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from bot.judge.rubrics.research_settings import ResearchOverrides, ResearchRules, ResearchSettings
from bot.settings import SettingsError, load_judge_section

SEED_DEFAULTS = {
    "min_claims": 1,
    "min_evidence_per_claim": 3,
    "min_distinct_domains_per_claim": 2,
    "require_counter_evidence": True,
    "min_confidence": 70,
    "min_verifiable_ratio": 0.9,
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The loader reads the process environment and ./.env: isolate both."""
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_defaults_are_the_seeds() -> None:
    assert ResearchRules().model_dump() == SEED_DEFAULTS
    assert load_judge_section(ResearchSettings).rules() == ResearchRules()


def test_the_three_models_name_the_same_settings() -> None:
    """A threshold added to one and not the others would be silently ignored."""
    settings = {name.removeprefix("research_") for name in ResearchSettings.model_fields}
    assert settings == set(ResearchRules.model_fields) == set(ResearchOverrides.model_fields)


def test_the_environment_sets_every_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "JUDGE_RESEARCH_MIN_CLAIMS": "4",
        "JUDGE_RESEARCH_MIN_EVIDENCE_PER_CLAIM": "2",
        "JUDGE_RESEARCH_MIN_DISTINCT_DOMAINS_PER_CLAIM": "1",
        "JUDGE_RESEARCH_REQUIRE_COUNTER_EVIDENCE": "false",
        "JUDGE_RESEARCH_MIN_CONFIDENCE": "55",
        "JUDGE_RESEARCH_MIN_VERIFIABLE_RATIO": "0.75",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    assert load_judge_section(ResearchSettings).rules() == ResearchRules(
        min_claims=4,
        min_evidence_per_claim=2,
        min_distinct_domains_per_claim=1,
        require_counter_evidence=False,
        min_confidence=55,
        min_verifiable_ratio=0.75,
    )


def test_dotenv_is_read_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(
        "JUDGE_RESEARCH_MIN_CLAIMS=5\nJUDGE_RESEARCH_MIN_CONFIDENCE=60\nJUDGE_MODE=blocking\n"
    )
    monkeypatch.setenv("JUDGE_RESEARCH_MIN_CONFIDENCE", "90")
    rules = load_judge_section(ResearchSettings).rules()
    assert (rules.min_claims, rules.min_confidence) == (5, 90)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("JUDGE_RESEARCH_MIN_CLAIMS", "many"),
        ("JUDGE_RESEARCH_MIN_CLAIMS", "-1"),
        ("JUDGE_RESEARCH_MIN_EVIDENCE_PER_CLAIM", "101"),
        ("JUDGE_RESEARCH_MIN_DISTINCT_DOMAINS_PER_CLAIM", "1.5"),
        ("JUDGE_RESEARCH_REQUIRE_COUNTER_EVIDENCE", "sometimes"),
        ("JUDGE_RESEARCH_MIN_CONFIDENCE", "700"),
        ("JUDGE_RESEARCH_MIN_VERIFIABLE_RATIO", "9"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as raised:
        load_judge_section(ResearchSettings)
    message = str(raised.value)
    assert message.startswith(f"{name}: ") and "\n" not in message
    assert value not in message.removeprefix(f"{name}: ").split(" ")


@pytest.mark.parametrize(
    "values",
    [
        {"min_claims": -1},
        {"min_claims": 1001},
        {"min_evidence_per_claim": 101},
        {"min_distinct_domains_per_claim": -1},
        {"min_confidence": 101},
        {"min_verifiable_ratio": 1.01},
        {"min_verifiable_ratio": -0.1},
        {"min_claims": 1, "surprise": 2},
    ],
)
def test_rules_are_bounded_and_closed(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ResearchRules(**values)


@pytest.mark.parametrize(
    ("yml", "expected"),
    [
        ("{}", {}),
        ("min_claims: 3", {"min_claims": 3}),
        ("require_counter_evidence: false", {"require_counter_evidence": False}),
        ("min_verifiable_ratio: 1", {"min_verifiable_ratio": 1.0}),
        (
            "min_evidence_per_claim: 0\nmin_distinct_domains_per_claim: 0\nmin_confidence: 0",
            {"min_evidence_per_claim": 0, "min_distinct_domains_per_claim": 0, "min_confidence": 0},
        ),
    ],
)
def test_overrides_replace_only_what_they_set(yml: str, expected: dict[str, Any]) -> None:
    """Unset keys keep the installation's values, whatever those are."""
    installation = ResearchRules(min_claims=2, min_confidence=50)
    overrides = ResearchOverrides.model_validate(yaml.safe_load(yml))
    merged = overrides.applied_to(installation)
    assert merged == ResearchRules(**{**installation.model_dump(), **expected})
    assert type(merged) is ResearchRules


def test_settings_and_overrides_compose() -> None:
    """The wiring: the installation's settings, then the repository's section."""
    settings = ResearchSettings(research_min_claims=4, research_require_counter_evidence=False)
    merged = ResearchOverrides(min_confidence=10).applied_to(settings.rules())
    assert (merged.min_claims, merged.require_counter_evidence, merged.min_confidence) == (
        4,
        False,
        10,
    )


@pytest.mark.parametrize(
    "yml",
    [
        "min_claims: '3'",
        "min_claims: 2.5",
        "min_claims: true",
        "require_counter_evidence: 'yes'",
        "min_confidence: 101",
        "min_verifiable_ratio: 1.5",
        "min_verifiable_ratio: '0.5'",
        "min_claim: 3",
    ],
)
def test_overrides_refuse_loose_or_misspelt_values(yml: str) -> None:
    """A repository's file is typed as written: no string or bool passes for a number, and
    a misspelt key is an error rather than a setting nobody applies."""
    with pytest.raises(ValidationError):
        ResearchOverrides.model_validate(yaml.safe_load(yml))


def test_values_are_immutable() -> None:
    rules = ResearchRules()
    with pytest.raises(ValidationError):
        rules.min_claims = 5  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ResearchOverrides().min_claims = 5  # type: ignore[misc]


def test_overrides_describe_themselves_for_the_config_schema() -> None:
    schema = ResearchOverrides.model_json_schema()
    for name, prop in schema["properties"].items():
        assert f"JUDGE_RESEARCH_{name.upper()}" in prop["description"]


def test_every_variable_is_documented() -> None:
    """docs/judging.md names each variable with its default, as the loader reads it."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "judging.md").read_text()
    defaults = ResearchRules().model_dump()
    for field in ResearchSettings.model_fields:
        default = defaults[field.removeprefix("research_")]
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        assert f"| `JUDGE_{field.upper()}` | `{shown}` |" in doc, field
