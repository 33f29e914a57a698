"""The process's services and where they live (bot.services)."""

from __future__ import annotations

import pytest

from bot.services import ServiceHub, ServicesNotReady


def test_services_are_refused_before_the_app_starts() -> None:
    hub = ServiceHub()
    assert not hub.ready
    with pytest.raises(ServicesNotReady):
        _ = hub.services
