"""The dashboard's query string: `?repo=OWNER/NAME&days=N&tag=TAG`, read strictly. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from bot.reports.triage import MAX_TAG_CHARS

DEFAULT_DAYS = 14
"""Calibration's own default: readiness needs two weeks of data."""
DAY_CHOICES = (1, 7, 14, 30, 90)
MAX_DAYS = 365
_DAYS = re.compile(r"[0-9]{1,4}")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True)
class Filter:
    repository: str | None
    days: int
    tag: str | None = None
    """Only flagged items whose record carries this tag are listed."""

    def query(self, **changes: object) -> str:
        """This filter's query string, with `changes` applied (for links that keep it)."""
        values: dict[str, object] = {
            "repo": self.repository or "",
            "days": self.days,
            "tag": self.tag or "",
        }
        values.update(changes)
        return urlencode({k: v for k, v in values.items() if v not in ("", None)})


class FilterError(ValueError):
    """A query the dashboard cannot read; the message says what to send instead."""


def parse_filter(query: Mapping[str, str]) -> Filter:
    repository = query.get("repo", "").strip() or None
    if repository is not None and not _REPOSITORY.fullmatch(repository):
        raise FilterError("repo must be OWNER/NAME (letters, digits, '-', '_', '.')")
    tag = query.get("tag", "").strip() or None
    if tag is not None and (len(tag) > MAX_TAG_CHARS or not tag.isprintable()):
        raise FilterError(f"tag must be at most {MAX_TAG_CHARS} printable characters")
    raw_days = query.get("days", "").strip()
    if not raw_days:
        return Filter(repository, DEFAULT_DAYS, tag)
    if not _DAYS.fullmatch(raw_days) or not 1 <= int(raw_days) <= MAX_DAYS:
        raise FilterError(f"days must be a whole number from 1 to {MAX_DAYS}")
    return Filter(repository, int(raw_days), tag)


def day_choices(days: int) -> list[int]:
    """The days offered in the form, with the current one among them."""
    return sorted({*DAY_CHOICES, days})
