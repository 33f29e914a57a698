"""While an app runs, the garbage collector leaves the startup heap alone and collects the
youngest generation less often (`bot/app.py`); both are as they were once the last app
running in the process has stopped."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import COLLECT_AFTER_ALLOCATIONS
from tests.support.app_helpers import make_settings, running_app

# Not the default either, so that a restore to the default would show.
THRESHOLD_BEFORE = (901, 11, 12)


@pytest.fixture
def collector_as_before() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(*THRESHOLD_BEFORE)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        gc.unfreeze()


@pytest.mark.usefixtures("collector_as_before")
async def test_the_startup_heap_is_frozen_while_the_app_runs(
    tmp_path: Path, github_keypair: Any
) -> None:
    assert gc.get_freeze_count() == 0
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with running_app(settings, start_workers=False):
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (COLLECT_AFTER_ALLOCATIONS, *THRESHOLD_BEFORE[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == THRESHOLD_BEFORE


@pytest.mark.usefixtures("collector_as_before")
async def test_the_collector_is_restored_only_once_the_last_app_stops(
    tmp_path: Path, github_keypair: Any
) -> None:
    first = make_settings(github_keypair.private_pem, tmp_path / "first")
    second = make_settings(github_keypair.private_pem, tmp_path / "second")
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    async with running_app(first, start_workers=False):
        async with running_app(second, start_workers=False):
            assert gc.get_threshold()[0] == COLLECT_AFTER_ALLOCATIONS
        assert gc.get_threshold()[0] == COLLECT_AFTER_ALLOCATIONS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == THRESHOLD_BEFORE
    assert gc.get_freeze_count() == 0
