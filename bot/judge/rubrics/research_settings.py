"""The research rubric's thresholds (seed 004): the operator's `JUDGE_RESEARCH_*` settings, a
repository's `research:` overrides in `.github/judge.yml`, and the plain value both make.

    ResearchSettings   JUDGE_RESEARCH_* from the environment (loaded by
                       `bot.settings.load_judge_section(ResearchSettings)`)
    ResearchOverrides  the `research:` section of .github/judge.yml, every key optional
    ResearchRules      what the checks read: `overrides.applied_to(settings.rules())`

    setting                          default  meaning
    min_claims                       1        claims a research file must make
    min_evidence_per_claim           3        distinct source links per claim (supporting
                                              or counter)
    min_distinct_domains_per_claim   2        distinct source domains among a claim's links
    require_counter_evidence         true     each claim must cite counter-evidence
    min_confidence                   70       the report's stated confidence, in percent
    min_verifiable_ratio             0.9      share of claims meeting every per-claim rule

The defaults are those of the system seed 004 describes. How a research file states its
claims, links and confidence, and which shortfall fails a change, is
`bot.judge.checks.research_claims`.

A repository may raise or lower any threshold: the checks cost no model call, so there is
no budget of the operator's to protect. The values are bounded so a typo (a ratio of 9, a
confidence of 700) is an error, not a bar nobody can meet.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.judge.rubrics.base import FrozenModel

ClaimCount = Annotated[int, Field(ge=0, le=1000)]
PerClaimCount = Annotated[int, Field(ge=0, le=100)]
Percent = Annotated[int, Field(ge=0, le=100)]
Ratio = Annotated[float, Field(ge=0, le=1)]

DEFAULT_MIN_CLAIMS = 1
DEFAULT_MIN_EVIDENCE_PER_CLAIM = 3
DEFAULT_MIN_DISTINCT_DOMAINS_PER_CLAIM = 2
DEFAULT_REQUIRE_COUNTER_EVIDENCE = True
DEFAULT_MIN_CONFIDENCE = 70
DEFAULT_MIN_VERIFIABLE_RATIO = 0.9


class ResearchRules(FrozenModel):
    """The thresholds one research file is checked against: a plain, immutable value."""

    min_claims: ClaimCount = DEFAULT_MIN_CLAIMS
    min_evidence_per_claim: PerClaimCount = DEFAULT_MIN_EVIDENCE_PER_CLAIM
    min_distinct_domains_per_claim: PerClaimCount = DEFAULT_MIN_DISTINCT_DOMAINS_PER_CLAIM
    require_counter_evidence: bool = DEFAULT_REQUIRE_COUNTER_EVIDENCE
    min_confidence: Percent = DEFAULT_MIN_CONFIDENCE
    min_verifiable_ratio: Ratio = DEFAULT_MIN_VERIFIABLE_RATIO


class ResearchSettings(BaseSettings):
    """`JUDGE_RESEARCH_*`. Built by the settings loader, which also reads `.env`; built
    directly it reads the process environment only.

    The prefix is `JUDGE_` and the fields carry `research_`, so the loader, which names a
    field `JUDGE_<FIELD>` in its errors, names the variable the operator actually set."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore", frozen=True)

    research_min_claims: ClaimCount = DEFAULT_MIN_CLAIMS
    research_min_evidence_per_claim: PerClaimCount = DEFAULT_MIN_EVIDENCE_PER_CLAIM
    research_min_distinct_domains_per_claim: PerClaimCount = DEFAULT_MIN_DISTINCT_DOMAINS_PER_CLAIM
    research_require_counter_evidence: bool = DEFAULT_REQUIRE_COUNTER_EVIDENCE
    research_min_confidence: Percent = DEFAULT_MIN_CONFIDENCE
    research_min_verifiable_ratio: Ratio = DEFAULT_MIN_VERIFIABLE_RATIO

    def rules(self) -> ResearchRules:
        """The installation's thresholds as the plain value the checks read."""
        return ResearchRules(
            **{name.removeprefix("research_"): value for name, value in self.model_dump().items()}
        )


class ResearchOverrides(FrozenModel):
    """The `research:` section of .github/judge.yml: thresholds of the research rubric for
    this repository. Unset keys keep the installation's (JUDGE_RESEARCH_*)."""

    min_claims: ClaimCount | None = Field(
        default=None,
        strict=True,
        description="Claims (headings, list items or lines starting 'Claim:') a research "
        "file must make. Unset: JUDGE_RESEARCH_MIN_CLAIMS, default 1.",
    )
    min_evidence_per_claim: PerClaimCount | None = Field(
        default=None,
        strict=True,
        description="Distinct http(s) source links each claim must cite, supporting or "
        "counter. Unset: JUDGE_RESEARCH_MIN_EVIDENCE_PER_CLAIM, default 3.",
    )
    min_distinct_domains_per_claim: PerClaimCount | None = Field(
        default=None,
        strict=True,
        description="Distinct domains (host without www.) among a claim's links. Unset: "
        "JUDGE_RESEARCH_MIN_DISTINCT_DOMAINS_PER_CLAIM, default 2.",
    )
    require_counter_evidence: bool | None = Field(
        default=None,
        strict=True,
        description="Whether each claim must cite counter-evidence (links under a "
        "'Counter-evidence' label). Unset: JUDGE_RESEARCH_REQUIRE_COUNTER_EVIDENCE, default "
        "true.",
    )
    min_confidence: Percent | None = Field(
        default=None,
        strict=True,
        description="Lowest confidence, in percent, a research file may state in its "
        "'Confidence:' line (0: none needed). Unset: JUDGE_RESEARCH_MIN_CONFIDENCE, "
        "default 70.",
    )
    min_verifiable_ratio: Ratio | None = Field(
        default=None,
        strict=True,
        description="Share of claims (0-1) that must meet every per-claim rule. Unset: "
        "JUDGE_RESEARCH_MIN_VERIFIABLE_RATIO, default 0.9.",
    )

    def applied_to(self, base: ResearchRules) -> ResearchRules:
        """The repository's thresholds: its own where set, the installation's elsewhere."""
        return ResearchRules.model_validate(
            {**base.model_dump(), **self.model_dump(exclude_none=True)}
        )
