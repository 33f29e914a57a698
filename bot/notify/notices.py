"""What a notification says: one `Notice` per event that needs a person, rendered as a
Slack-compatible body (`text`) with the same facts as structured fields for other tools.

Pure: no I/O. The `key` names the event itself, so a retried delivery that meets the
same event again finds it already sent.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Notice", "NoticeKind", "render"]

NOTICE_TEXT_LIMIT = 3000  # Slack truncates a message's text around here; keep the link visible.


class NoticeKind(enum.StrEnum):
    ESCALATION = "escalation"
    CIRCUIT_BREAKER = "circuit_breaker"
    MERGE_ESCALATION = "merge_escalation"
    PROVIDER_OUTAGE = "provider_outage"


_TITLES = {
    NoticeKind.ESCALATION: "Judges disagree: a person decides",
    NoticeKind.CIRCUIT_BREAKER: "Automatic judging stopped: a person is needed",
    NoticeKind.MERGE_ESCALATION: "Merge failed: a person is needed",
    NoticeKind.PROVIDER_OUTAGE: "Judge provider outage",
}


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    key: str
    summary: str
    repository: str | None = None
    url: str | None = None
    facts: dict[str, str] = field(default_factory=dict)


def render(notice: Notice) -> dict[str, Any]:
    """The JSON body to POST."""
    where = f" in {notice.repository}" if notice.repository else ""
    lines = [f"*{_TITLES[notice.kind]}*{where}", notice.summary]
    if notice.url:
        lines.append(notice.url)
    text = "\n".join(lines)
    if len(text) > NOTICE_TEXT_LIMIT:
        link = f"\n{notice.url}" if notice.url else ""
        text = text[: NOTICE_TEXT_LIMIT - len(link) - 1] + "…" + link
    return {
        "text": text,
        "kind": notice.kind.value,
        "title": _TITLES[notice.kind],
        "summary": notice.summary,
        "repository": notice.repository,
        "url": notice.url,
        "facts": dict(notice.facts),
    }
