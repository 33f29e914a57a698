"""The state value: issued by this process, checked on return, within the hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.registration.state_token import (
    STATE_LIFETIME,
    StateCheck,
    StateSigner,
    issue_state,
    verify_state,
)

KEY = b"k" * 32
NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
GOOD = issue_state(KEY, NOW, "nonce")
EXPIRES, NONCE, MAC = GOOD.split(".")


@pytest.mark.parametrize(
    ("state", "at", "expected"),
    [
        (GOOD, NOW, StateCheck.VALID),
        (GOOD, NOW + STATE_LIFETIME - timedelta(seconds=1), StateCheck.VALID),
        (GOOD, NOW + STATE_LIFETIME, StateCheck.EXPIRED),
        (None, NOW, StateCheck.MISSING),
        ("", NOW, StateCheck.MISSING),
        ("x" * 201, NOW, StateCheck.MALFORMED),
        ("é.n.m", NOW, StateCheck.MALFORMED),
        ("no-dots", NOW, StateCheck.MALFORMED),
        (f"{EXPIRES}.{NONCE}", NOW, StateCheck.MALFORMED),
        (f"soon.{NONCE}.{MAC}", NOW, StateCheck.MALFORMED),
        (f"{EXPIRES}..{MAC}", NOW, StateCheck.MALFORMED),
        (f"{EXPIRES}.{NONCE}.", NOW, StateCheck.MALFORMED),
        (f"{int(EXPIRES) + 3600}.{NONCE}.{MAC}", NOW, StateCheck.FORGED),
        (f"{EXPIRES}.other.{MAC}", NOW, StateCheck.FORGED),
        (f"{EXPIRES}.{NONCE}.{MAC[:-1]}A", NOW, StateCheck.FORGED),
        (issue_state(b"another key", NOW, "nonce"), NOW, StateCheck.FORGED),
    ],
)
def test_verify_state(state: str | None, at: datetime, expected: StateCheck) -> None:
    assert verify_state(KEY, state, at) is expected


def test_each_process_has_its_own_key_and_nonces() -> None:
    first, second = StateSigner(), StateSigner()
    state = first.issue(NOW)
    assert first.verify(state, NOW) is StateCheck.VALID
    assert second.verify(state, NOW) is StateCheck.FORGED
    assert first.issue(NOW) != state
