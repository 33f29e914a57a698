"""`JUDGE_NOTIFY_*`: where notifications go and how hard to try.

The URL is a secret: Slack, Teams and Matrix webhook addresses carry their credential in
the path, so it is never logged and is scrubbed like a key.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["NotifySettings"]


class NotifySettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    notify_url: SecretStr | None = None
    notify_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    notify_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 10.0
    # Consecutive judgments left UNDETERMINED by a provider failure before an outage is
    # reported; one is noise (a timeout), several in a row are an outage.
    notify_outage_after: Annotated[int, Field(ge=1)] = 3

    @field_validator("notify_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("notify_url")
    @classmethod
    def _http_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value

    @property
    def enabled(self) -> bool:
        return self.notify_url is not None

    def secret_values(self) -> list[str]:
        return [] if self.notify_url is None else [self.notify_url.get_secret_value()]
