"""Notifications reach a real HTTP endpoint once per event, retried, never blocking and
never leaking the webhook address."""

from __future__ import annotations

import logging

import httpx
import pytest
from pydantic import ValidationError

from bot.notify.notices import NOTICE_TEXT_LIMIT, Notice, NoticeKind, render
from bot.notify.outage import OutageState, observe
from bot.notify.sender import SENT_NAMESPACE, Notifier
from bot.settings.notify import NotifySettings
from bot.storage.base import Storage
from tests.notify.conftest import SECRET_PATH, Receiver


def escalation(key: str = "acme/app#7") -> Notice:
    return Notice(
        NoticeKind.ESCALATION,
        key,
        "Quick and deep judges disagree on docs/a.md (accept vs reject).",
        repository="acme/app",
        url="https://github.com/acme/app/issues/7",
        facts={"sha": "abc123"},
    )


async def notifier_for(
    receiver: Receiver, storage: Storage, outcomes: list[tuple[str, str]], attempts: int = 3
) -> tuple[Notifier, httpx.AsyncClient]:
    client = httpx.AsyncClient()
    settings = NotifySettings(notify_url=receiver.url, notify_attempts=attempts)
    notifier = Notifier(
        settings,
        client,
        storage,
        on_outcome=lambda kind, outcome: outcomes.append((kind, outcome)),
        retry_base_seconds=0.0,
    )
    return notifier, client


async def test_an_event_is_sent_once_even_when_met_again(
    receiver: Receiver, storage: Storage
) -> None:
    outcomes: list[tuple[str, str]] = []
    notifier, client = await notifier_for(receiver, storage, outcomes)
    async with client:
        assert await notifier.send(escalation())
        assert not await notifier.send(escalation())
    assert len(receiver.bodies) == 1
    body = receiver.bodies[0]
    assert body["kind"] == "escalation" and body["repository"] == "acme/app"
    assert "https://github.com/acme/app/issues/7" in body["text"]
    assert body["facts"] == {"sha": "abc123"}
    assert outcomes == [("escalation", "sent"), ("escalation", "duplicate")]


async def test_a_failing_endpoint_is_retried_then_succeeds(
    receiver: Receiver, storage: Storage
) -> None:
    receiver.statuses = [500, 503]
    outcomes: list[tuple[str, str]] = []
    notifier, client = await notifier_for(receiver, storage, outcomes)
    async with client:
        assert await notifier.send(escalation())
    assert len(receiver.bodies) == 3
    assert outcomes == [("escalation", "sent")]


async def test_giving_up_counts_a_failure_and_lets_a_later_retry_send(
    receiver: Receiver, storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.statuses = [500, 500]
    outcomes: list[tuple[str, str]] = []
    notifier, client = await notifier_for(receiver, storage, outcomes, attempts=2)
    caplog.set_level(logging.WARNING)
    async with client:
        assert not await notifier.send(escalation())
        assert await storage.kv_get(SENT_NAMESPACE, "acme/app#7") is None
        assert await notifier.send(escalation())
    assert outcomes == [("escalation", "failed"), ("escalation", "sent")]
    assert "HTTP 500" in caplog.text
    assert "hunter2" not in caplog.text and SECRET_PATH not in caplog.text


async def test_an_unreachable_endpoint_is_a_counted_failure_not_an_error(
    storage: Storage,
) -> None:
    outcomes: list[tuple[str, str]] = []
    settings = NotifySettings(notify_url="http://127.0.0.1:9/hook", notify_attempts=1)
    async with httpx.AsyncClient() as client:
        notifier = Notifier(
            settings, client, storage, on_outcome=lambda k, o: outcomes.append((k, o))
        )
        assert not await notifier.send(escalation())
    assert outcomes == [("escalation", "failed")]


async def test_post_returns_at_once_and_drain_waits(receiver: Receiver, storage: Storage) -> None:
    outcomes: list[tuple[str, str]] = []
    notifier, client = await notifier_for(receiver, storage, outcomes)
    async with client:
        notifier.post(escalation("one"))
        notifier.post(escalation("two"))
        assert receiver.bodies == []
        await notifier.drain(within_seconds=10)
    assert sorted(outcome for _, outcome in outcomes) == ["sent", "sent"]


async def test_without_a_url_nothing_is_sent(storage: Storage) -> None:
    async with httpx.AsyncClient() as client:
        notifier = Notifier(NotifySettings(), client, storage)
        assert not notifier.enabled
        notifier.post(escalation())
        await notifier.drain(within_seconds=1)
        assert not await notifier.send(escalation())
        assert await storage.kv_get(SENT_NAMESPACE, "acme/app#7") is None


def test_a_long_summary_is_cut_but_keeps_its_link() -> None:
    notice = Notice(
        NoticeKind.MERGE_ESCALATION, "k", "x" * 10_000, url="https://github.com/a/b/pull/1"
    )
    text = render(notice)["text"]
    assert len(text) <= NOTICE_TEXT_LIMIT
    assert text.endswith("https://github.com/a/b/pull/1")
    assert render(Notice(NoticeKind.PROVIDER_OUTAGE, "k", "down"))["text"].startswith(
        "*Judge provider outage*\ndown"
    )


@pytest.mark.parametrize(
    ("before", "failed", "after", "report"),
    [
        (OutageState(), False, OutageState(), False),
        (OutageState(), True, OutageState(1, False), False),
        (OutageState(1, False), True, OutageState(2, False), False),
        (OutageState(2, False), True, OutageState(3, True), True),
        (OutageState(3, True), True, OutageState(4, True), False),
        (OutageState(4, True), False, OutageState(), False),
    ],
)
def test_an_outage_is_reported_once_at_the_threshold(
    before: OutageState, failed: bool, after: OutageState, report: bool
) -> None:
    assert observe(before, provider_failed=failed, threshold=3) == (after, report)


def test_outage_state_round_trips_and_tolerates_junk() -> None:
    state = OutageState(2, True)
    assert OutageState.from_json(state.as_json()) == state
    assert OutageState.from_json(None) == OutageState()
    assert OutageState.from_json({"consecutive_failures": "x", "reported": "yes"}) == OutageState()


def test_settings_refuse_a_url_that_is_not_http_and_treat_blank_as_unset() -> None:
    with pytest.raises(ValidationError) as raised:
        NotifySettings(notify_url="ftp://example.com/secret-path")
    assert "secret-path" not in str(raised.value)
    assert not NotifySettings(notify_url=" ").enabled
    settings = NotifySettings(notify_url="https://hooks.example/abc")
    assert settings.secret_values() == ["https://hooks.example/abc"]
    assert NotifySettings().secret_values() == []
