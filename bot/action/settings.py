"""The action's own `JUDGE_ACTION_*` settings (docs/action.md), loaded with
`bot.settings.load_judge_section(ActionSettings)` like every feature's section."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.judging.repo_config import MergeMethod


class MergeOnAccept(StrEnum):
    OFF = "off"
    AUTO_MERGE = "auto-merge"
    MERGE_QUEUE = "merge-queue"


class ActionSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    action_dir: Path | None = Field(
        default=None,
        description="Where `judge-bot action` keeps the verdict cache and writes the verdict "
        "records (default: `$RUNNER_TEMP/judge-bot`, else `.judge-bot`).",
    )
    action_merge: MergeOnAccept = Field(
        default=MergeOnAccept.OFF,
        description="What an accepted pull request's head gets: `off`, `auto-merge` "
        "(GitHub's auto-merge at the judged sha) or `merge-queue` (the branch's merge "
        "queue at the judged sha). The action never merges itself.",
    )
    action_merge_method: MergeMethod = Field(
        default="squash",
        description="How GitHub's auto-merge merges: `merge`, `squash` or `rebase`.",
    )

    def directory(self, runner_temp: str | None) -> Path:
        if self.action_dir is not None:
            return self.action_dir
        return Path(runner_temp) / "judge-bot" if runner_temp else Path(".judge-bot")
