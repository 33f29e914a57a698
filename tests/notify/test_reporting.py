"""From judgments to notices: escalations, and provider outages counted across judgments."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from bot.judge.records import CallStats, Tier, Verdict, VerdictRecord
from bot.notify.notices import NoticeKind
from bot.notify.reporting import (
    OUTAGE_KEY,
    OUTAGE_NAMESPACE,
    escalation_notice,
    note_judgment,
    provider_failed,
)
from bot.notify.sender import Notifier
from bot.settings.notify import NotifySettings
from bot.storage.base import Storage
from tests.notify.conftest import Receiver
from tests.support.verdict_builders import WHEN, make_record


def call(error: str | None) -> CallStats:
    return CallStats(
        tier=Tier.QUICK, model="gpt-5-nano", provider="openai", latency_ms=5.0, error=error
    )


def failed_record(minutes: int = 0) -> VerdictRecord:
    return make_record(
        verdict=Verdict.UNDETERMINED,
        final_decision=Verdict.UNDETERMINED,
        calls=[call("ProviderTimeout"), call("HTTP 503")],
        timestamp=WHEN + timedelta(minutes=minutes),
    )


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([], None),
        ([make_record(calls=[])], None),
        ([make_record(calls=[call(None)])], False),
        ([make_record(calls=[call("HTTP 503"), call(None)])], False),
        ([failed_record()], True),
        # Every call failed but a mechanical reject decided: not an outage judgment.
        (
            [
                make_record(
                    verdict=Verdict.REJECT,
                    final_decision=Verdict.REJECT,
                    calls=[call("HTTP 503")],
                )
            ],
            False,
        ),
    ],
)
def test_provider_failed(records: list[VerdictRecord], expected: bool | None) -> None:
    assert provider_failed(records) is expected


def test_escalation_notice_names_issue_and_sha() -> None:
    notice = escalation_notice("acme/app", 12, "https://github.com/acme/app/issues/12", "f" * 40)
    assert notice.kind is NoticeKind.ESCALATION
    assert notice.key == "escalation:acme/app#12"
    assert "#12" in notice.summary and "f" * 12 in notice.summary


async def test_three_failed_judgments_in_a_row_send_one_outage_notice(
    receiver: Receiver,
    storage: Storage,
) -> None:
    async with httpx.AsyncClient() as client:
        notifier = Notifier(
            NotifySettings(notify_url=receiver.url, notify_outage_after=3), client, storage
        )
        for minute in range(5):
            await note_judgment(notifier, storage, [failed_record(minute)])
        await notifier.drain(within_seconds=10)
        assert [body["kind"] for body in receiver.bodies] == ["provider_outage"]
        assert "3 judgments in a row" in receiver.bodies[0]["text"]
        # A judgment the providers answered ends the outage; the next one is reported anew.
        await note_judgment(notifier, storage, [make_record(calls=[call(None)])])
        assert await storage.kv_get(OUTAGE_NAMESPACE, OUTAGE_KEY) == {
            "consecutive_failures": 0,
            "reported": False,
        }
        for minute in range(10, 13):
            await note_judgment(notifier, storage, [failed_record(minute)])
        await notifier.drain(within_seconds=10)
    assert len(receiver.bodies) == 2


async def test_nothing_is_counted_without_a_notifier_or_a_model_call(storage: Storage) -> None:
    await note_judgment(None, storage, [failed_record()])
    async with httpx.AsyncClient() as client:
        disabled = Notifier(NotifySettings(), client, storage)
        await note_judgment(disabled, storage, [failed_record()])
        enabled = Notifier(NotifySettings(notify_url="http://127.0.0.1:9/x"), client, storage)
        await note_judgment(enabled, storage, [make_record(calls=[])])
        await note_judgment(enabled, storage, [])
    assert await storage.kv_get(OUTAGE_NAMESPACE, OUTAGE_KEY) is None
