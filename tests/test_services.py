"""The process's services and where they live (bot.services)."""

from __future__ import annotations

import pytest

from bot.services import HubKey, ServiceHub, ServicesNotReady


def test_services_are_refused_before_the_app_starts() -> None:
    hub = ServiceHub()
    assert not hub.ready
    with pytest.raises(ServicesNotReady):
        _ = hub.services


def test_a_hub_key_gives_back_what_was_plugged_in() -> None:
    words: HubKey[list[str]] = HubKey("words")
    hub = ServiceHub()
    with pytest.raises(ServicesNotReady, match="nothing is plugged into words"):
        hub.plugged(words)
    hub.plug(words, ["a"])
    assert hub.plugged(words) == ["a"]
    assert repr(words) == "<HubKey words>"


def test_two_keys_of_one_name_are_two_slots() -> None:
    hub = ServiceHub()
    first: HubKey[int] = HubKey("n")
    second: HubKey[int] = HubKey("n")
    hub.plug(first, 1)
    with pytest.raises(ServicesNotReady):
        hub.plugged(second)
