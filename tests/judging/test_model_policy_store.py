"""Loading `.github/judge.yml` under JUDGE_ALLOWED_MODELS: a refused override is a
RepoConfigError naming its line, decided on every load (cached or fetched) and never
cached, so a changed list is obeyed at once; problems of the file itself come first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import CONFIG_NAMESPACE, load_repo_config
from bot.judging.repo_config import RepoConfig
from bot.storage.base import Storage
from tests.judging.test_config_store import FakeGateway

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
TEXT = "mode: blocking\nmodels:\n  quick: gpt-5\n  deep: claude-opus-4\n"


async def load(gateway: FakeGateway, storage: Storage, allowed: Sequence[str]) -> RepoConfig:
    return await load_repo_config(gateway, storage, "main", NOW, allowed_models=allowed)


async def test_allowed_overrides_load(storage: Storage) -> None:
    config = await load(FakeGateway(TEXT), storage, ["gpt-*", "claude-*"])
    assert (config.models.quick, config.models.deep) == ("gpt-5", "claude-opus-4")


async def test_no_list_allows_any_override(storage: Storage) -> None:
    config = await load(FakeGateway(TEXT), storage, [])
    assert config.models.quick == "gpt-5"


async def test_refused_override_names_its_line_and_key(storage: Storage) -> None:
    with pytest.raises(RepoConfigError) as caught:
        await load(FakeGateway(TEXT), storage, ["claude-*"])
    error = caught.value
    assert (error.line, error.column, error.key, error.problems) == (3, 10, "models.quick", 1)
    assert '"gpt-5"' in error.message
    assert '"claude-*"' in error.message
    assert "JUDGE_ALLOWED_MODELS" in error.message


async def test_every_refused_tier_is_an_issue(storage: Storage) -> None:
    with pytest.raises(RepoConfigError) as caught:
        await load(FakeGateway(TEXT), storage, ["qwen3:*"])
    assert [(i.line, i.key) for i in caught.value.issues] == [
        (3, "models.quick"),
        (4, "models.deep"),
    ]
    assert str(caught.value).endswith("(and 1 more problem)")


async def test_cached_file_is_governed_by_the_list_of_each_load(storage: Storage) -> None:
    """The operator's list is read at start-up; a file cached under another list is judged
    by the new one without waiting for the cache to expire, and without a new fetch."""
    gateway = FakeGateway(TEXT)
    await load(gateway, storage, [])
    with pytest.raises(RepoConfigError, match=r"models\.quick"):
        await load(gateway, storage, ["claude-*"])
    config = await load(gateway, storage, ["*"])
    assert config.models.quick == "gpt-5"
    assert gateway.fetches == 1


async def test_a_refusal_is_not_cached_as_the_files_error(storage: Storage) -> None:
    gateway = FakeGateway(TEXT)
    with pytest.raises(RepoConfigError):
        await load(gateway, storage, ["claude-*"])
    entry = await storage.kv_get(CONFIG_NAMESPACE, "octo/hello")
    assert entry is not None and "issues" not in entry
    with pytest.raises(RepoConfigError, match=r"models\.quick"):
        await load(gateway, storage, ["claude-*"])
    assert (await load(gateway, storage, [])).models.quick == "gpt-5"
    assert gateway.fetches == 1


async def test_a_broken_file_is_reported_before_its_models(storage: Storage) -> None:
    text = "models:\n  quick: gpt-5\nlimits:\n  max_files: 0\n"
    for _ in range(2):  # fetched, then from the cache
        with pytest.raises(RepoConfigError) as caught:
            await load(FakeGateway(text), storage, ["claude-*"])
        assert [i.key for i in caught.value.issues] == ["limits.max_files"]


async def test_absent_file_is_never_refused(storage: Storage) -> None:
    gateway = FakeGateway(None)
    for _ in range(2):
        assert await load(gateway, storage, ["claude-*"]) == RepoConfig()
