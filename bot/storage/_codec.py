"""Value conversions shared by the backends: UTC datetimes and JSON documents.

Both backends refuse naive datetimes instead of guessing a zone, so a caller's
mistake shows up at once rather than as a lease that is off by hours.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)
# SQLite INTEGER and PostgreSQL bigint are both signed 64-bit.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def require_int64(value: int | None, name: str) -> int | None:
    """`value` if a 64-bit column holds it; ValueError (naming the field) otherwise.

    Checked before a row joins a shared commit: the drivers' own errors (OverflowError,
    asyncpg's DataError) would otherwise surface mid-batch and differ per backend."""
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} {value} does not fit a signed 64-bit integer")
    return value


def require_utc(value: datetime) -> datetime:
    """The same instant in UTC; raises ValueError for a naive datetime."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()} given; storage needs aware UTC")
    return value.astimezone(UTC)


def to_micros(value: datetime) -> int:
    """Whole microseconds since the epoch: exact, and orders correctly as an integer."""
    return (require_utc(value) - _EPOCH) // _ONE_MICROSECOND


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def optional_from_micros(value: int | None) -> datetime | None:
    return None if value is None else from_micros(value)


def dump_json(value: dict[str, Any]) -> str:
    """Strict JSON (NaN and infinities refused) so both backends accept the same values.

    PostgreSQL's jsonb cannot hold U+0000, and model output or judged files can contain
    it, so it becomes U+FFFD (the replacement character) on both backends alike."""
    if not isinstance(value, dict):
        raise TypeError(f"a JSON object is required, got {type(value).__name__}")
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if "\\u0000" in text:
        text = json.dumps(
            _without_nul(value), ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
    return text


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(item) for item in value]
    return value


def load_json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"stored JSON is not an object: {type(value).__name__}")
    return value
