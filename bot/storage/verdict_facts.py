"""The facts the reports read from a verdict record, in the compact form storage keeps
beside it (table `verdict_facts`, written in the transaction that appends the record).
Pure.

Calibration and the dashboard read every record of a window; decoding each whole record
cost seconds per 100,000. These columns hold only what they count: the decision and
label, who overrode, the rounds as `[tier, model, family, verdict]` in protocol order,
the calls as `[tier, model, latency_ms, tokens, attempts, ok]`, and the record's tags.
Values are kept as the record wrote them (the reports check them), so a record read
here or from storage gives the same facts. A record missing one of them, or holding a
value of the wrong kind, is stored as unreadable and counted as such.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class FactColumns:
    decision: str | None
    label: str | None
    mode: str | None
    decided_by: str | None
    overridden: bool
    rounds: str
    """JSON: `[[tier, model, family or null, verdict or null], ...]`, in round order."""
    calls: str
    """JSON: `[[tier, model, latency_ms, tokens, attempts, ok], ...]`."""
    tags: str | None
    """JSON list of strings; None when the record has none."""
    readable: bool


UNREADABLE: Final = FactColumns(None, None, None, None, False, "[]", "[]", None, False)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def fact_columns(record: Mapping[str, Any]) -> FactColumns:
    """The record's facts, or `UNREADABLE` when it lacks what the reports need."""
    try:
        return _columns(record)
    except (KeyError, TypeError, ValueError, AttributeError):
        return UNREADABLE


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _columns(record: Mapping[str, Any]) -> FactColumns:
    label = _text(record["go_no_go"])
    decision = _text(record["final_decision"])
    mode = record.get("mode")
    return FactColumns(
        decision=decision,
        label=label,
        mode=mode if isinstance(mode, str) else None,
        decided_by=_optional_text(record.get("decided_by")),
        overridden=record.get("human_override") is True,
        rounds=_compact(round_facts(record)),
        calls=_compact([_call(c) for c in record.get("calls") or ()]),
        tags=tags_of(record),
        readable=True,
    )


def round_facts(record: Mapping[str, Any]) -> list[list[str | None]]:
    """Every round in order, as the `rounds` column keeps it; as `bot.record_view.rounds_of`,
    the top-level fields are the last round unless `previous_rounds` lists it already."""
    previous = record.get("previous_rounds") or ()
    rounds = [_round(r) for r in sorted(previous, key=_number)]
    listed = {_number(r) for r in previous}
    number = int(record.get("round") or 0)
    tier = record.get("judge_tier")
    if number >= 1 and tier is not None and number not in listed:
        verdict = _optional_text(record.get("verdict"))
        rounds.append([str(tier), str(record.get("model") or ""), None, verdict])
    return rounds


def _number(raw: Mapping[str, Any]) -> int:
    return int(raw["round"])


def _round(raw: Mapping[str, Any]) -> list[str | None]:
    family = raw.get("family")
    return [
        str(raw["judge_tier"]),
        str(raw["model"]),
        str(family) if family else None,
        _optional_text(raw.get("verdict")),
    ]


def _call(raw: Mapping[str, Any]) -> list[object]:
    tokens = int(raw.get("prompt_tokens") or 0) + int(raw.get("completion_tokens") or 0)
    attempts = raw.get("attempts")
    return [
        str(raw["tier"]),
        str(raw["model"]),
        float(raw["latency_ms"]),
        tokens,
        1 if attempts is None else int(attempts),
        raw.get("error") is None,
    ]


def tags_of(record: Mapping[str, Any]) -> str | None:
    """The record's string tags as JSON, in their order without repeats; anything else
    under `tags` is not a tag (a record is never unreadable for its tags)."""
    raw = record.get("tags")
    if not isinstance(raw, list):
        return None
    tags = list(dict.fromkeys(t for t in raw if isinstance(t, str)))
    return _compact(tags) if tags else None


def decode_tags(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(json.loads(text))
