"""What a reviewer sees besides the files: the diff, the CI results, earlier verdicts.

Plain input types of the judge engine (a `JudgeRequest` carries one `ReviewContext`),
filled by the App from GitHub and storage; the CLI and the pre-push hook send none.

* `FileDiff`: a judged file's change as unified-diff hunks (`@@ ... @@` and the lines),
  with a note when it was not GitHub's own patch (GitHub left it out as too large, so it
  was computed from the base and head files) or is incomplete.
* `CiResult`: another app's check run or a commit status on the head commit: its name,
  state, whether the pull request requires it, and a short excerpt of what it reported.
* `EarlierVerdict`: the judges' verdict on an earlier head of the same pull request and
  what they found missing or to improve, newest first, so the completion judge can say
  whether this push addressed it.

Everything here came from the change's author or from other systems: the prompt fences
it as data like the files (bot/judge/engine/prompts.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FAILING_STATES = frozenset({"failure", "action_required", "error", "timed_out", "startup_failure"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class FileDiff(_Model):
    path: str
    diff: str = ""
    note: str = ""


class CiResult(_Model):
    name: str
    state: str
    required: bool | None = None
    excerpt: str = ""

    @property
    def failing(self) -> bool:
        return self.state in FAILING_STATES

    def line(self) -> str:
        """`name: state (required)`: the part of a result that is never trimmed."""
        required = " (required)" if self.required else ""
        return f"{self.name}: {self.state}{required}"


class EarlierVerdict(_Model):
    head_sha: str
    decision: str
    findings: list[str] = Field(default_factory=list)
    reasoning: str = ""


class ReviewContext(_Model):
    diffs: list[FileDiff] = Field(default_factory=list)
    ci: list[CiResult] = Field(default_factory=list)
    earlier: list[EarlierVerdict] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.diffs or self.ci or self.earlier)
