"""Server settings, named after Probot's so existing users feel at home.

Built explicitly by the app factory (or by tests with keyword arguments), never at import.
A `.env` file in the working directory is read too; real environment variables win.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.intake.worker import DEFAULT_MAX_RUN_SECONDS
from bot.judge.config import JudgeConfig

DEFAULT_API_URL = "https://api.github.com"


class LogFormat(enum.StrEnum):
    JSON = "json"
    PRETTY = "pretty"


class SettingsError(Exception):
    """A setting is missing or malformed. The message names the variable, never its value."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
        populate_by_name=True,
    )

    app_id: str | None = Field(default=None, alias="APP_ID")
    private_key: SecretStr | None = Field(default=None, alias="PRIVATE_KEY")
    private_key_path: Path | None = Field(default=None, alias="PRIVATE_KEY_PATH")
    webhook_secret: SecretStr | None = Field(default=None, alias="WEBHOOK_SECRET")
    webhook_path: str = Field(default="/api/github/webhooks", alias="WEBHOOK_PATH")
    host: str = Field(default="0.0.0.0", alias="HOST")
    port: Annotated[int, Field(ge=0, le=65535)] = Field(default=3000, alias="PORT")
    log_level: str = Field(default="INFO", alias="LOG_LEVEL")
    log_format: LogFormat = Field(default=LogFormat.JSON, alias="LOG_FORMAT")
    github_api_url: str = Field(default=DEFAULT_API_URL, alias="GITHUB_API_URL")
    github_graphql_url: str | None = Field(default=None, alias="GITHUB_GRAPHQL_URL")
    database_url: str = Field(default="sqlite:///judge-bot.sqlite3", alias="DATABASE_URL")

    # Delivery processing. Defaults suit one small instance; the names are ours (JUDGE_*).
    workers: Annotated[int, Field(ge=1, le=64)] = Field(default=4, alias="JUDGE_WORKERS")
    max_attempts: Annotated[int, Field(ge=1, le=50)] = Field(default=5, alias="JUDGE_MAX_ATTEMPTS")
    # Short, because it is how long a dead process's delivery waits (its check run showing
    # "in progress"); a live worker renews it every third of it, however long a judgment takes.
    lease_seconds: Annotated[float, Field(gt=0)] = Field(default=30.0, alias="JUDGE_LEASE_SECONDS")
    max_run_seconds: Annotated[float, Field(gt=0)] = Field(
        default=DEFAULT_MAX_RUN_SECONDS, alias="JUDGE_MAX_RUN_SECONDS"
    )
    poll_interval: Annotated[float, Field(gt=0)] = Field(default=1.0, alias="JUDGE_POLL_INTERVAL")
    retry_base_seconds: Annotated[float, Field(ge=0)] = Field(
        default=2.0, alias="JUDGE_RETRY_BASE_SECONDS"
    )
    retry_max_seconds: Annotated[float, Field(ge=0)] = Field(
        default=300.0, alias="JUDGE_RETRY_MAX_SECONDS"
    )
    write_interval: Annotated[float, Field(ge=0)] = Field(
        default=1.0, alias="JUDGE_GITHUB_WRITE_INTERVAL"
    )
    delivery_retention_days: Annotated[float, Field(ge=0)] = Field(
        default=30.0, alias="JUDGE_DELIVERY_RETENTION_DAYS"
    )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

    @field_validator("webhook_path")
    @classmethod
    def _absolute_path(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value

    @field_validator("github_api_url", "github_graphql_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str) -> str:
        if not value.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("must start with sqlite:///, postgresql:// or postgres://")
        return value

    @model_validator(mode="after")
    def _credentials_complete(self) -> Settings:
        if self.app_id is None:
            return self
        if not self.app_id.strip().isdigit():
            raise ValueError("APP_ID must be the App's numeric id")
        if self.private_key is None and self.private_key_path is None:
            raise ValueError("PRIVATE_KEY or PRIVATE_KEY_PATH is required when APP_ID is set")
        if self.webhook_secret is None or not self.webhook_secret.get_secret_value():
            raise ValueError("WEBHOOK_SECRET is required when APP_ID is set")
        return self

    @property
    def configured(self) -> bool:
        """False in setup mode: no App registered yet, only the setup page is served."""
        return self.app_id is not None

    @property
    def graphql_url(self) -> str:
        if self.github_graphql_url:
            return self.github_graphql_url
        return derive_graphql_url(self.github_api_url)

    def private_key_pem(self) -> str:
        """The PEM text, from PRIVATE_KEY (with Probot's escaped newlines) or PRIVATE_KEY_PATH."""
        if self.private_key is not None:
            return self.private_key.get_secret_value().replace("\\n", "\n")
        if self.private_key_path is not None:
            return self.private_key_path.read_text(encoding="utf-8")
        raise SettingsError("PRIVATE_KEY is not set")


def derive_graphql_url(api_url: str) -> str:
    """GitHub Enterprise Server serves REST at /api/v3 and GraphQL at /api/graphql."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        return base[: -len("/v3")] + "/graphql"
    return base + "/graphql"


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment (and .env), turning any problem into one clear
    `SettingsError` that names the variable and never echoes its value."""
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None
    if settings.configured:
        _check_private_key(settings)
    return settings


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    location = [str(part) for part in first.get("loc", ())]
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if not location:
        return message
    name = _ALIASES.get(location[0], location[0]).upper()
    return f"{name}: {message}"


def load_judge_config() -> JudgeConfig:
    """The judge's `JUDGE_*` settings, with the same one-line error contract."""
    try:
        return JudgeConfig()
    except ValidationError as exc:
        first = exc.errors()[0]
        location = [str(part) for part in first.get("loc", ())]
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        name = f"JUDGE_{location[0].upper()}: " if location else ""
        raise SettingsError(f"{name}{message}") from None


def _check_private_key(settings: Settings) -> None:
    try:
        pem = settings.private_key_pem()
    except OSError as exc:
        raise SettingsError(f"PRIVATE_KEY_PATH: cannot read the file ({exc.strerror})") from None
    name = "PRIVATE_KEY" if settings.private_key is not None else "PRIVATE_KEY_PATH"
    try:
        load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise SettingsError(f"{name}: not a PEM-encoded RSA private key") from None


_ALIASES = {name: str(field.alias) for name, field in Settings.model_fields.items() if field.alias}
