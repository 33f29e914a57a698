"""The features' own `JUDGE_*` settings, loaded together so `serve` refuses a bad one
at start with one line, as it does the server's and the judge's."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.judge.rubrics.research_settings import ResearchRules, ResearchSettings
from bot.settings import load_judge_section
from bot.settings.merge import MergeSettings, default_merge_settings
from bot.settings.notify import NotifySettings

__all__ = ["FeatureSettings", "load_feature_settings"]


@dataclass(frozen=True)
class FeatureSettings:
    merge: MergeSettings = field(default_factory=default_merge_settings)
    research: ResearchRules = field(default_factory=ResearchRules)
    # Built without reading the environment: the app passes the loaded ones.
    notify: NotifySettings = field(default_factory=NotifySettings.model_construct)

    def secret_values(self) -> list[str]:
        return self.notify.secret_values()


def load_feature_settings() -> FeatureSettings:
    """From the environment and `.env`; raises `SettingsError` naming the variable."""
    return FeatureSettings(
        merge=load_judge_section(MergeSettings),
        research=load_judge_section(ResearchSettings).rules(),
        notify=load_judge_section(NotifySettings),
    )
