"""Logging: one JSON object per line (or a readable line), with secrets scrubbed.

Secrets can reach a log line by accident (an exception that quotes a header, a URL with a
token). So every record passes a filter that replaces known secret values and anything
shaped like a credential (the shapes in `bot.credentials`, the same ones the judge
reports and the renderer scrubs) before any handler formats it.

The JSON line keeps Probot's two knobs for log shippers, `LOG_LEVEL_IN_STRING` (false:
pino's numeric levels) and `LOG_MESSAGE_KEY`; `bot.settings` reads them. This module
imports nothing of the settings, so the settings can check a message key against the
keys a line already uses (`RESERVED_KEYS`).
"""

from __future__ import annotations

import enum
import json
import logging
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bot.credentials import REDACTED, redact


class LogFormat(enum.StrEnum):
    JSON = "json"
    PRETTY = "pretty"


# Fields a handler may attach with `extra=` that belong in every structured line.
CONTEXT_FIELDS = ("delivery_id", "event", "action", "installation", "repository", "attempt")
RESERVED_KEYS = frozenset({"time", "level", "logger", "exception", *CONTEXT_FIELDS})
"""Keys a JSON line fills itself; a message key among them would overwrite one."""
DEFAULT_MESSAGE_KEY = "message"
SILENT = "SILENT"
"""Probot's `silent`: no log line at all (a level above CRITICAL)."""
# pino's numbers, which Probot's JSON lines carry unless LOG_LEVEL_IN_STRING=true.
PINO_LEVELS = {
    logging.DEBUG: 20,
    logging.INFO: 30,
    logging.WARNING: 40,
    logging.ERROR: 50,
    logging.CRITICAL: 60,
}


class SecretScrubber(logging.Filter):
    """Replaces registered secret values and credential-shaped strings in the final
    message."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str) -> None:
        # Very short values would scrub ordinary words; real secrets are long.
        if len(secret) >= 8:
            self._secrets.add(secret)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact(text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = self.scrub(record.getMessage())
        record.msg = message
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # Formatters render exc_info later; render it now so it is scrubbed too.
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class JsonFormatter(logging.Formatter):
    def __init__(
        self, *, level_in_string: bool = True, message_key: str = DEFAULT_MESSAGE_KEY
    ) -> None:
        super().__init__()
        self.level_in_string = level_in_string
        self.message_key = message_key

    def _level(self, record: logging.LogRecord) -> str | int:
        if self.level_in_string:
            return record.levelname.lower()
        return PINO_LEVELS.get(record.levelno, record.levelno)

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": self._level(record),
            "logger": record.name,
            self.message_key: record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class PrettyFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S")
        context = " ".join(
            f"{field}={getattr(record, field)}"
            for field in CONTEXT_FIELDS
            if getattr(record, field, None) is not None
        )
        text = f"{stamp} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if context:
            text += f" [{context}]"
        if record.exc_text:
            text += "\n" + record.exc_text
        return text


def level_number(level: str) -> int:
    """The stdlib number of a level name from the settings (`SILENT` included)."""
    if level == SILENT:
        return logging.CRITICAL + 10
    number = logging.getLevelName(level)
    if not isinstance(number, int):
        raise ValueError(f"unknown log level {level!r}")
    return number


def configure_logging(
    level: str,
    fmt: LogFormat,
    secrets: Iterable[str] = (),
    *,
    level_in_string: bool = True,
    message_key: str = DEFAULT_MESSAGE_KEY,
) -> SecretScrubber:
    """Install one stderr handler on the root logger; returns the scrubber so tokens
    minted later (installation tokens) can be registered with it."""
    scrubber = SecretScrubber(secrets)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(scrubber)
    if fmt is LogFormat.JSON:
        formatter: logging.Formatter = JsonFormatter(
            level_in_string=level_in_string, message_key=message_key
        )
    else:
        formatter = PrettyFormatter()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level_number(level))
    # aiohttp logs every request at INFO; keep access logs at WARNING unless debugging.
    logging.getLogger("aiohttp.access").setLevel(
        logging.DEBUG if level == "DEBUG" else logging.WARNING
    )
    return scrubber
