"""Verdict records and the plain input types of the judge engine.

A `VerdictRecord` is the append-only audit entry for one judged change. Its core
fields keep the shape of the phase C record from the original design (task_id,
model, mode, verdict, scores, average, reasoning, improvements, timestamp, round,
judge_tier, previous_rounds, consensus, human_override) so existing triage
queries (`jq '.verdict'`) keep working; everything else is added alongside.

Field meanings that are easy to misread:

* `verdict` is the verdict of the last round that ran (the seed's per-round
  label); `final_decision` is what the whole protocol concluded, after mechanical
  checks, injection escalation, four-eyes substitution and human overrides. Read
  `final_decision` to act.
* `model_verdict` on a round is the label the model wrote itself. It is stored
  for calibration and never used to decide: verdicts come from the scores.
* `round` is 0 when no model ran for the decision (mechanical hard failure, no
  models configured, four-eyes, throttle or budget refusal); `judge_tier` is
  then None. A verdict-cache hit repeats the cached judgment's rounds (`round`,
  `judge_tier`, `previous_rounds` as they were) with an empty `calls` list: no
  model was called this time.
* `context` is what the judges were shown, piece by piece (task texts, earlier
  verdicts, CI results, diffs, files): each piece's size in characters and how many
  reached each tier that ran; `trimmed` when a tier's budget cut it.
* `go_no_go` is the phase A/B pre-push label: GO, NO-GO or UNDETERMINED, read from the
  scores of the deciding judgment (bot/judge/engine/judgment.py `go_no_go` has the rule), not
  from `final_decision`: an escalate whose judges scored below 3 is NO-GO.

Records are written as one compact JSON line (`to_jsonl`). The JSON Schema
(2020-12) is generated from these models: `python -m bot.judge.records` prints
it and docs/verdict-schema.json must equal that output (a test checks).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

SCHEMA_VERSION = "1.0.0"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://judge-bot.invalid/schemas/verdict-record.json"


class Verdict(StrEnum):
    ACCEPT = "accept"
    IMPROVE = "improve"
    REJECT = "reject"
    ESCALATE = "escalate"
    UNDETERMINED = "undetermined"


class Tier(StrEnum):
    QUICK = "quick"
    DEEP = "deep"
    TIEBREAKER = "tiebreaker"


class RubricName(StrEnum):
    """Defined here (and re-exported by rubrics) so records need not import rubrics."""

    CONTENT = "content"
    CODE = "code"
    COMPLETION = "completion"
    RESEARCH = "research"


FindingSource = Literal["mechanical", "injection"]
Severity = Literal["hard", "soft"]
GoNoGo = Literal["GO", "NO-GO", "UNDETERMINED"]
Consensus = Literal["unanimous", "majority"]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, use_enum_values=False)


class JudgedFile(_Model):
    """One file of the change under review, as text.

    `added_lines` are 1-based line numbers of lines this change added (from the
    diff); None when unknown, in which case line-scoped checks look at every
    line. A `removed` file carries no meaningful content and is skipped by the
    content checks.
    """

    path: str
    content: str
    added_lines: list[int] | None = None
    status: str | None = None

    @property
    def removed(self) -> bool:
        return self.status == "removed"


class TaskSpec(_Model):
    """What the change was meant to do (from the PR, the issue or the CLI)."""

    task_id: str
    description: str = ""
    acceptance: str = ""
    directives: list[str] = Field(default_factory=list)

    def labelled_texts(self) -> list[tuple[str, str]]:
        """The texts the judges are shown, each under the pseudo-path findings use
        (`<task description>`, `<task acceptance>`, `<task directive N>`); empty ones
        are left out."""
        texts = [("<task description>", self.description), ("<task acceptance>", self.acceptance)]
        texts += [(f"<task directive {n}>", d) for n, d in enumerate(self.directives, start=1)]
        return [(label, text) for label, text in texts if text.strip()]


class Finding(_Model):
    """A problem found without a model. The message never quotes a secret."""

    source: FindingSource
    kind: str
    severity: Severity
    path: str
    line: int | None = Field(default=None, ge=1)
    message: str


class Truncation(_Model):
    path: str
    original_chars: int = Field(ge=0)
    kept_chars: int = Field(ge=0)
    tier: Tier


ContextPieceKind = Literal["task", "earlier", "ci", "diff", "file"]


class ContextPiece(_Model):
    """One part of what the judges were shown."""

    kind: ContextPieceKind
    name: str
    chars: int = Field(ge=0, description="Its size in characters, before any cut.")
    sent: dict[Tier, int] = Field(
        default_factory=dict, description="Characters sent to each tier that ran."
    )
    trimmed: bool = Field(default=False, description="Some tier was sent less than all of it.")


class CallStats(_Model):
    """One provider call (after its retries)."""

    tier: Tier
    model: str
    provider: str
    latency_ms: float = Field(ge=0)
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    attempts: int = Field(default=1, ge=0)
    error: str | None = None


class RoundRecord(_Model):
    """One model's evaluation inside the tiered protocol."""

    round: int = Field(ge=1, le=3)
    judge_tier: Tier
    model: str
    family: str
    verdict: Verdict | None = Field(
        default=None, description="Decided from the scores; None when the call or parse failed."
    )
    model_verdict: str | None = Field(
        default=None, description="The label the model wrote; recorded, never trusted."
    )
    scores: dict[str, float] = Field(default_factory=dict)
    average: float | None = None
    reasoning: str = ""
    improvements: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    substituted_for: str | None = Field(
        default=None,
        description="Family replaced at this tier because it authored the change.",
    )


class VerdictRecord(_Model):
    # --- phase C core (seed shape) ---
    task_id: str
    model: str = Field(description="Model of the last round that ran; empty when none ran.")
    mode: str = Field(
        description="Tier of the last round, or how the decision was reached without a "
        "model (e.g. mechanical, unconfigured, human)."
    )
    verdict: Verdict
    scores: dict[str, float] = Field(default_factory=dict)
    average: float | None = None
    reasoning: str = ""
    improvements: list[str] = Field(default_factory=list)
    timestamp: AwareDatetime
    round: int = Field(ge=0, le=3)
    judge_tier: Tier | None = None
    previous_rounds: list[RoundRecord] = Field(default_factory=list)
    consensus: Consensus | None = None
    human_override: bool | None = None
    # --- additions ---
    schema_version: str = SCHEMA_VERSION
    rubric: RubricName
    prompt_version: str
    repository: str | None = None
    head_sha: str | None = None
    description: str = ""
    files: list[str] = Field(default_factory=list)
    content_hashes: dict[str, Sha256Hex] = Field(
        default_factory=dict, description="path -> sha256 hex of the judged content"
    )
    truncation: list[Truncation] = Field(default_factory=list)
    context: list[ContextPiece] = Field(
        default_factory=list,
        description="What the judges were shown, by size (docs/judging.md: Review context).",
    )
    tags: list[str] = Field(
        default_factory=list,
        description="Rubric-term tags (docs/tagging.md): dimensions the judges discussed or "
        "scored low, problems they or the mechanical checks named, the repository's own.",
    )
    mechanical_findings: list[Finding] = Field(default_factory=list)
    injection_findings: list[Finding] = Field(default_factory=list)
    calls: list[CallStats] = Field(default_factory=list)
    final_decision: Verdict
    go_no_go: GoNoGo = Field(
        description="Phase A/B label (seed 000): NO-GO when any score of the deciding "
        "judgment (the last round that answered) is below the rubric's bar, even when the "
        "protocol escalated; UNDETERMINED when no round answered. docs/judging.md has the "
        "table."
    )
    reason: str | None = Field(default=None, description="Why undetermined or escalated.")
    authoring_families: list[str] = Field(default_factory=list)
    decided_by: str | None = Field(default=None, description="Login of a human who overrode.")
    models_not_run: bool = False
    models_not_run_note: str | None = None

    def to_jsonl(self) -> str:
        """One compact JSON line, without the trailing newline."""
        return self.model_dump_json()

    @classmethod
    def from_jsonl(cls, line: str) -> VerdictRecord:
        return cls.model_validate_json(line)


def content_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(files: Iterable[JudgedFile]) -> str | None:
    """The content the judges read: each file's path and content hash, as the verdict
    records keep them. None when there is no file."""
    parts = sorted((f.path, content_sha256(f.content)) for f in files)
    if not parts:
        return None
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def go_no_go_of(verdict: Verdict) -> GoNoGo:
    """The label of a decision with no judgment to read: a human override (accept GO,
    reject NO-GO), a mechanical reject, a judgment nobody answered (undetermined).
    Where judges answered, their scores decide (`bot.judge.engine.judgment.go_no_go`)."""
    if verdict is Verdict.ACCEPT:
        return "GO"
    if verdict in (Verdict.IMPROVE, Verdict.REJECT):
        return "NO-GO"
    return "UNDETERMINED"


class _Answerable(Protocol):
    @property
    def verdict(self) -> Verdict | None: ...


_Round = TypeVar("_Round", bound=_Answerable)


def deciding_round(rounds: Sequence[_Round]) -> _Round | None:
    """The last round that answered (a failed round has no verdict and no scores): the
    one the GO/NO-GO label is read from. A record's `RoundRecord`s, or the reports'
    compact facts of them."""
    return next((r for r in reversed(rounds) if r.verdict is not None), None)


def verdict_json_schema() -> dict[str, Any]:
    body = VerdictRecord.model_json_schema(mode="serialization")
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
    }
    schema.update(body)
    schema["title"] = "Judge verdict record"
    schema["description"] = (
        "One append-only audit record per judged change (one JSON object per line in JSONL). "
        f"Schema version {SCHEMA_VERSION}."
    )
    return schema


def render_schema() -> str:
    return json.dumps(verdict_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_schema())
