"""Every setting judge-bot reads, the server's and the judge's, through one loader.

Names follow Probot's where Probot has one, so an existing Probot deployment's environment
works unchanged; a Probot setting this App cannot honour (`REDIS_URL`, `SENTRY_DSN`, ...)
is refused with one line rather than ignored, because an operator who set it expects it
to do something.

One loader (`load_settings`, `load_judge_settings`, `load_database_url`, all through
`_load`) reads the process environment and one `.env` file (`env_file`), and the
environment wins. The server, `judge`, `verdicts export` and the pre-push hook therefore
agree on every value, `DATABASE_URL` and `JUDGE_*` included. The models themselves read
no file: only the loader decides which `.env` counts, so a model built directly (tests,
a repository's overrides) never picks one up by accident.

A `.env` that git tracks is refused unless named in `JUDGE_ENV_FILE`: the CLI and the
hook run inside other people's repositories, and a committed `.env` could point
`JUDGE_LLM_BASE_URL` at a host of its author's choosing while the user's key comes from
the environment.

Without `DATABASE_URL`, every command uses `judge-bot.sqlite3` at the top of the git work
tree it runs in, or in the working directory outside one (`default_database_url`). Git
runs the pre-push hook at the top of the work tree, so the hook, `judge`, `verdicts
export` and `serve` find one file wherever in the repository they run.

Problems become one `SettingsError` line that names the variable and never its value.
Nothing is read at import.

The operator's settings of the features live beside this module, as plain models:

    merge     the merge queue's and loop prevention's `JUDGE_*` settings (seed 004)
    notify    `JUDGE_NOTIFY_*`: where notices go
    features  those sections (and the research rubric's) loaded with the rest at start
    server    the web server's own: how long a client may take to send a request, and
              how long an idle connection stays open (loaded by `serve` alone)
"""

from __future__ import annotations

import base64
import binascii
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.judge.settings import JudgeSettings
from bot.logs import DEFAULT_MESSAGE_KEY, RESERVED_KEYS, SILENT, LogFormat

__all__ = [
    "DATABASE_FILE",
    "DEFAULT_API_URL",
    "ENV_FILE_VARIABLE",
    "LOG_LEVELS",
    "UNSUPPORTED",
    "DatabaseSettings",
    "LogFormat",
    "Settings",
    "SettingsError",
    "default_database_url",
    "derive_graphql_url",
    "env_file",
    "load_database_url",
    "load_judge_section",
    "load_judge_settings",
    "load_settings",
    "tracked_by_git",
    "work_tree_top",
]

# Generous: a judgment of many files with escalation takes minutes, not an hour. It exists
# because the heartbeat would otherwise keep a hung handler's delivery forever.
DEFAULT_MAX_RUN_SECONDS = 3600.0

DEFAULT_API_URL = "https://api.github.com"
ENV_FILE_VARIABLE = "JUDGE_ENV_FILE"
DATABASE_FILE = "judge-bot.sqlite3"

# Probot's LOG_LEVEL names (pino's) and the stdlib's, any case, to the stdlib's.
LOG_LEVELS = {
    "trace": "DEBUG",
    "debug": "DEBUG",
    "info": "INFO",
    "warn": "WARNING",
    "warning": "WARNING",
    "error": "ERROR",
    "fatal": "CRITICAL",
    "critical": "CRITICAL",
    "silent": SILENT,
}

# Probot settings judge-bot has no counterpart for, and why (the refusal's one line).
UNSUPPORTED = {
    "redis_url": "REDIS_URL: not supported; judge-bot shares work between replicas through "
    "its database (DATABASE_URL=postgresql://...), not Redis: unset REDIS_URL",
    "sentry_dsn": "SENTRY_DSN: not supported; judge-bot reports errors in its log lines "
    "only: unset SENTRY_DSN",
}


class SettingsError(Exception):
    """A setting is missing or malformed. The message names the variable, never its value."""


# -- where settings come from ----------------------------------------------------------


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or no such directory: not a work tree


def work_tree_top(cwd: Path | None = None) -> Path | None:
    """The top of the git work tree `cwd` is in, None outside one (or without git)."""
    result = _git(cwd or Path.cwd(), "rev-parse", "--show-toplevel")
    if result is None or result.returncode != 0 or not result.stdout.strip():
        return None
    return Path(result.stdout.strip())


def default_database_url(cwd: Path | None = None) -> str:
    """`judge-bot.sqlite3` at the top of the work tree, else in the working directory."""
    top = work_tree_top(cwd)
    if top is None:
        return f"sqlite:///{DATABASE_FILE}"
    return f"sqlite:///{top / DATABASE_FILE}"


def tracked_by_git(path: Path) -> bool:
    """Whether git tracks `path` (False outside a work tree or without git)."""
    result = _git(path.parent, "ls-files", "--error-unmatch", "--", path.name)
    return result is not None and result.returncode == 0


def env_file(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The one `.env` file: `JUDGE_ENV_FILE` when set (empty: none), else `.env` in the
    working directory when it exists and git does not track it (module docstring)."""
    environ = os.environ if environ is None else environ
    base = cwd or Path.cwd()
    named = environ.get(ENV_FILE_VARIABLE)
    if named is not None:
        if not named:
            return None
        path = base / named
        if not path.is_file():
            raise SettingsError(f"{ENV_FILE_VARIABLE}: no such file")
        return path
    path = base / ".env"
    if not path.is_file():
        return None
    if tracked_by_git(path):
        raise SettingsError(
            ".env: git tracks this file, so judge-bot does not read it (a repository's "
            f"files must not choose where your keys are sent); set {ENV_FILE_VARIABLE}=.env "
            f"to read it anyway, or {ENV_FILE_VARIABLE}= to read no file"
        )
    return path


# -- the models ------------------------------------------------------------------------


def _blank_is_unset(value: Any) -> Any:
    # Probot's defaults are empty strings: `REDIS_URL=` in a .env means "not set".
    if isinstance(value, str) and not value.strip():
        return None
    return value


class DatabaseSettings(BaseSettings):
    """The one setting every command needs, the CLI's without the server's."""

    model_config = SettingsConfigDict(
        extra="ignore",
        case_sensitive=False,
        populate_by_name=True,
    )

    database_url: str = Field(default_factory=default_database_url, alias="DATABASE_URL")

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str) -> str:
        if not value.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("must start with sqlite:///, postgresql:// or postgres://")
        return value


class Settings(DatabaseSettings):
    """The server's settings (the judge's are `JudgeSettings`, loaded the same way)."""

    app_id: str | None = Field(default=None, alias="APP_ID")
    private_key: SecretStr | None = Field(default=None, alias="PRIVATE_KEY")
    private_key_path: Path | None = Field(default=None, alias="PRIVATE_KEY_PATH")
    webhook_secret: SecretStr | None = Field(default=None, alias="WEBHOOK_SECRET")
    metrics_token: SecretStr | None = Field(default=None, alias="METRICS_TOKEN")
    """When set, `GET /metrics` answers only `Authorization: Bearer <token>`."""
    dashboard_token: SecretStr | None = Field(default=None, alias="DASHBOARD_TOKEN")
    """When set, `/dashboard` is on, for `Authorization: Bearer <token>` or a signed-in person."""
    webhook_path: str = Field(default="/api/github/webhooks", alias="WEBHOOK_PATH")
    host: str = Field(default="0.0.0.0", alias="HOST")
    port: Annotated[int, Field(ge=0, le=65535)] = Field(default=3000, alias="PORT")
    log_level: str = Field(default="INFO", alias="LOG_LEVEL")
    log_format: LogFormat = Field(default=LogFormat.JSON, alias="LOG_FORMAT")
    # Our JSON lines always named levels; Probot's default (false) would be pino's numbers.
    log_level_in_string: bool = Field(default=True, alias="LOG_LEVEL_IN_STRING")
    log_message_key: str = Field(default=DEFAULT_MESSAGE_KEY, alias="LOG_MESSAGE_KEY")
    github_api_url: str = Field(default=DEFAULT_API_URL, alias="GITHUB_API_URL")
    github_graphql_url: str | None = Field(default=None, alias="GITHUB_GRAPHQL_URL")
    ghe_host: str | None = Field(default=None, alias="GHE_HOST")
    ghe_protocol: str | None = Field(default=None, alias="GHE_PROTOCOL")

    # Read only to be refused (UNSUPPORTED); secrets, as a DSN carries a key.
    redis_url: SecretStr | None = Field(default=None, alias="REDIS_URL")
    sentry_dsn: SecretStr | None = Field(default=None, alias="SENTRY_DSN")

    # Registration (setup mode) and local development, as Probot names them.
    gh_org: str | None = Field(default=None, alias="GH_ORG")
    """Register the App under this organization instead of the signed-in user."""
    base_url: str | None = Field(default=None, alias="BASE_URL")
    """The server's public address; the registered App's webhook URL is built from it."""
    webhook_proxy_url: str | None = Field(default=None, alias="WEBHOOK_PROXY_URL")
    """A smee.io channel whose forwarded deliveries go through the same intake."""
    github_client_id: str | None = Field(default=None, alias="GITHUB_CLIENT_ID")
    github_client_secret: SecretStr | None = Field(default=None, alias="GITHUB_CLIENT_SECRET")

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
    # How long a delivery waits for GitHub to answer again (unreachable, 5xx, no answer in
    # time), counted from its arrival, before such a failure costs its attempts.
    github_outage_hours: Annotated[float, Field(gt=0, le=720)] = Field(
        default=24.0, alias="JUDGE_GITHUB_OUTAGE_HOURS"
    )
    write_interval: Annotated[float, Field(ge=0)] = Field(
        default=1.0, alias="JUDGE_GITHUB_WRITE_INTERVAL"
    )
    delivery_retention_days: Annotated[float, Field(ge=0)] = Field(
        default=30.0, alias="JUDGE_DELIVERY_RETENTION_DAYS"
    )
    # How often each judge tier's model is looked up in its provider's model list (a free
    # lookup, no judgment); 0: never.
    self_check_interval_seconds: Annotated[float, Field(ge=0)] = Field(
        default=3600.0, alias="JUDGE_SELF_CHECK_INTERVAL_SECONDS"
    )
    # How often every tier and alternate is sent one tiny judgment for the doctor's facts on
    # `/` and /healthz?detail=1 (also at start). Paid, and every replica probes: 0: never.
    probe_interval_seconds: Annotated[float, Field(ge=0)] = Field(
        default=3600.0, alias="JUDGE_PROBE_INTERVAL_SECONDS"
    )
    # How often the calibration KPI gauges on /metrics are computed again; 0: never.
    kpi_refresh_seconds: Annotated[float, Field(ge=0)] = Field(
        default=300.0, alias="JUDGE_KPI_REFRESH_SECONDS"
    )
    # Missed deliveries: GitHub does not retry a delivery that failed while we were down.
    redeliver_missed: bool = Field(default=True, alias="JUDGE_REDELIVER_MISSED")
    redeliver_window_hours: Annotated[float, Field(gt=0, le=72)] = Field(
        default=24.0, alias="JUDGE_REDELIVER_WINDOW_HOURS"
    )
    redeliver_interval_seconds: Annotated[float, Field(gt=0)] = Field(
        default=300.0, alias="JUDGE_REDELIVER_INTERVAL_SECONDS"
    )

    @field_validator(
        "ghe_host",
        "ghe_protocol",
        "redis_url",
        "sentry_dsn",
        "gh_org",
        "base_url",
        "webhook_proxy_url",
        "github_client_id",
        "github_client_secret",
        "dashboard_token",
        mode="before",
    )
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_unset(value)

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = LOG_LEVELS.get(value.strip().lower())
        if level is None:
            raise ValueError(
                "must be one of trace, debug, info, warn, error, fatal, silent (Probot's) "
                "or DEBUG, INFO, WARNING, ERROR, CRITICAL"
            )
        return level

    @field_validator("log_message_key")
    @classmethod
    def _free_key(cls, value: str) -> str:
        if not value or value in RESERVED_KEYS:
            raise ValueError(
                "must be a key the JSON line does not use already (not "
                + ", ".join(sorted(RESERVED_KEYS))
                + ")"
            )
        return value

    @field_validator("webhook_path")
    @classmethod
    def _absolute_path(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value

    @field_validator("github_api_url", "github_graphql_url", "base_url", "webhook_proxy_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("ghe_host")
    @classmethod
    def _bare_host(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host = value.strip().rstrip("/")
        if not host or "://" in host or "/" in host or any(c.isspace() for c in host):
            raise ValueError("must be a host name, with an optional :port, without scheme or path")
        return host

    @field_validator("ghe_protocol")
    @classmethod
    def _web_protocol(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.strip().lower() not in ("http", "https"):
            raise ValueError("must be http or https")
        return value.strip().lower()

    @model_validator(mode="after")
    def _enterprise_server(self) -> Settings:
        """GHE_HOST, as Probot reads it: the API at {protocol}://{host}/api/v3. Given with
        GITHUB_API_URL, both must name the same API, else neither is trusted."""
        if self.ghe_host is None:
            if self.ghe_protocol is not None:
                raise ValueError("GHE_PROTOCOL is set without GHE_HOST: set both or neither")
            return self
        api_url = f"{self.ghe_protocol or 'https'}://{self.ghe_host}/api/v3"
        if "github_api_url" in self.model_fields_set and self.github_api_url != api_url:
            raise ValueError(
                "GHE_HOST and GITHUB_API_URL name different servers: set only one of them"
            )
        self.github_api_url = api_url
        return self

    @model_validator(mode="after")
    def _nothing_unsupported(self) -> Settings:
        for field, refusal in UNSUPPORTED.items():
            if getattr(self, field) is not None:
                raise ValueError(refusal)
        return self

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
        """The PEM text, from PRIVATE_KEY (PEM with Probot's escaped newlines, or the PEM
        base64-encoded, as Probot accepts) or PRIVATE_KEY_PATH."""
        if self.private_key is not None:
            text = self.private_key.get_secret_value()
            if "-----BEGIN" not in text:
                text = _from_base64(text)
            return text.replace("\\n", "\n")
        if self.private_key_path is not None:
            return self.private_key_path.read_text(encoding="utf-8")
        raise SettingsError("PRIVATE_KEY is not set")

    def secret_values(self) -> list[str]:
        """Every secret value set, for log scrubbing."""
        values = (
            self.webhook_secret,
            self.private_key,
            self.metrics_token,
            self.dashboard_token,
            self.redis_url,
            self.sentry_dsn,
            self.github_client_secret,
        )
        return [value.get_secret_value() for value in values if value is not None]


def _from_base64(text: str) -> str:
    """`text` decoded when it is base64 of a PEM, else unchanged (then refused as not PEM)."""
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return text
    return decoded if "-----BEGIN" in decoded else text


def derive_graphql_url(api_url: str) -> str:
    """GitHub Enterprise Server serves REST at /api/v3 and GraphQL at /api/graphql."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        return base[: -len("/v3")] + "/graphql"
    return base + "/graphql"


# -- the loader ------------------------------------------------------------------------

_Model = TypeVar("_Model", bound=BaseSettings)


def _load(model: type[_Model], overrides: Mapping[str, Any], name: Callable[[str], str]) -> _Model:
    """`model` from `overrides`, the environment and `env_file()`, in that order; any
    problem is one `SettingsError` line naming each variable (`name` of a field)."""
    source = env_file()
    try:
        return model(_env_file=source, **overrides)
    except ValidationError as exc:
        raise SettingsError(_describe(exc, name)) from None


def _describe(exc: ValidationError, name: Callable[[str], str]) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        location = error.get("loc", ())
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        problem = f"{name(str(location[0]))}: {message}" if location else message
        if problem not in problems:
            problems.append(problem)
    return "; ".join(problems)


def _server_name(field: str) -> str:
    return _ALIASES.get(field, field).upper()


def _judge_name(field: str) -> str:
    return f"JUDGE_{field.upper()}"


def load_settings(**overrides: object) -> Settings:
    """The server's settings; a configured App's private key is checked too."""
    settings = _load(Settings, overrides, _server_name)
    if settings.configured:
        _check_private_key(settings)
    return settings


def load_judge_settings(**overrides: object) -> JudgeSettings:
    """The judge's `JUDGE_*` settings, from the same sources as the server's."""
    return _load(JudgeSettings, overrides, _judge_name)


def load_judge_section(model: type[_Model], **overrides: object) -> _Model:
    """A feature's own `JUDGE_*` settings model (its fields named without the prefix),
    from the same sources as everything else."""
    return _load(model, overrides, _judge_name)


def load_database_url() -> str:
    """DATABASE_URL as the server reads it, for the commands that need nothing else."""
    return _load(DatabaseSettings, {}, _server_name).database_url


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
