"""Every setting name judge-bot reads: the server's, the judge's and each feature's own
`JUDGE_*` model (loaded through `bot.settings.load_judge_section`)."""

from __future__ import annotations

from pydantic_settings import BaseSettings

from bot.action.settings import ActionSettings
from bot.judge.rubrics.research_settings import ResearchSettings
from bot.judge.settings import JudgeSettings
from bot.reports.thresholds import CalibrationThresholds
from bot.settings import Settings
from bot.settings.merge import MergeSettings
from bot.settings.notify import NotifySettings
from bot.settings.server import ServerSettings

JUDGE_SECTIONS: tuple[type[BaseSettings], ...] = (
    JudgeSettings,
    ActionSettings,
    MergeSettings,
    NotifySettings,
    CalibrationThresholds,
    ResearchSettings,
    ServerSettings,
)


def all_setting_names() -> set[str]:
    server = {str(field.alias) for field in Settings.model_fields.values() if field.alias}
    judge = {f"JUDGE_{name.upper()}" for section in JUDGE_SECTIONS for name in section.model_fields}
    return server | judge
