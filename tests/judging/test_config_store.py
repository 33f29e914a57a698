"""Loading `.github/judge.yml`: cached by fetch, parsed off the event loop, and every
failure of the text (however it fails) is a RepoConfigError, while GitHub's errors are not."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import cast

import aiohttp
import pytest
import yaml
from gidgethub import GitHubBroken, GraphQLException
from gidgethub.abc import GitHubAPI

from bot.github.gateway import RepoGateway
from bot.github.types import RemoteFile
from bot.judging import config_store
from bot.judging.config_file import RepoConfigError, parse_repo_config
from bot.judging.config_store import (
    CONFIG_NAMESPACE,
    CONFIG_TTL,
    forget_repo_config,
    load_repo_config,
)
from bot.judging.repo_config import RepoConfig
from bot.storage.base import Storage

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


class FakeGateway(RepoGateway):
    """A gateway whose only call is `blobs`, answering with one text (None: no file)."""

    def __init__(self, text: str | None, *, fail: BaseException | None = None) -> None:
        super().__init__(cast(GitHubAPI, None), "Octo/Hello")
        self.text = text
        self.fail = fail
        self.fetches = 0

    async def blobs(self, expressions: Sequence[str]) -> dict[str, RemoteFile | None]:
        self.fetches += 1
        if self.fail is not None:
            raise self.fail
        return {
            e: None if self.text is None else RemoteFile(self.text, f"blob{self.fetches}")
            for e in expressions
        }


class CountingParser:
    """Stands in for `parse_repo_config`, counting calls and the threads they run on."""

    def __init__(self, parse: Callable[[str], RepoConfig] = parse_repo_config) -> None:
        self.parse = parse
        self.threads: list[int] = []

    def __call__(self, text: str) -> RepoConfig:
        self.threads.append(threading.get_ident())
        return self.parse(text)


@pytest.fixture
def parser(monkeypatch: pytest.MonkeyPatch) -> CountingParser:
    counting = CountingParser()
    monkeypatch.setattr(config_store, "parse_repo_config", counting)
    return counting


async def load(gateway: RepoGateway, storage: Storage, now: datetime = NOW) -> RepoConfig:
    return await load_repo_config(gateway, storage, "main", now)


# -- the ordinary cases ----------------------------------------------------------------


async def test_absent_file_gives_defaults_and_is_cached(storage: Storage) -> None:
    gateway = FakeGateway(None)
    assert await load(gateway, storage) == RepoConfig()
    assert await load(gateway, storage, NOW + timedelta(minutes=1)) == RepoConfig()
    assert gateway.fetches == 1


async def test_valid_file_is_fetched_again_after_the_ttl(storage: Storage) -> None:
    gateway = FakeGateway("mode: blocking\n")
    assert (await load(gateway, storage)).mode == "blocking"
    assert (await load(gateway, storage, NOW + CONFIG_TTL / 2)).mode == "blocking"
    assert gateway.fetches == 1
    gateway.text = "mode: advisory\n"
    assert (await load(gateway, storage, NOW + CONFIG_TTL)).mode == "advisory"
    assert gateway.fetches == 2


async def test_forgetting_the_config_fetches_it_again(storage: Storage) -> None:
    gateway = FakeGateway("mode: blocking\n")
    await load(gateway, storage)
    await forget_repo_config(storage, "octo/HELLO")
    gateway.text = "mode: advisory\n"
    assert (await load(gateway, storage)).mode == "advisory"


async def test_entry_cached_before_errors_were_is_parsed_again(storage: Storage) -> None:
    """Entries written by earlier versions hold only the text."""
    entry = {"fetched_at": NOW.isoformat(), "blob_sha": "b", "text": "mode: [x]\n"}
    await storage.kv_put(CONFIG_NAMESPACE, "octo/hello", entry)
    gateway = FakeGateway("mode: blocking\n")
    with pytest.raises(RepoConfigError, match="line 1, key mode"):
        await load(gateway, storage)
    assert gateway.fetches == 0


# -- the cache's rows, as installations already hold them ---------------------------------

VALID_ROW = {"fetched_at": NOW.isoformat(), "blob_sha": "blob1", "text": "mode: blocking\n"}
INVALID_ROW = {
    "fetched_at": NOW.isoformat(),
    "blob_sha": "blob1",
    "text": "mode: x\nk: 1\n",
    "issues": [
        {"line": 1, "column": 7, "key": "mode", "message": "not a mode"},
        {"line": 2, "column": 1, "key": None, "message": "bad syntax"},
    ],
    "problems": 3,
}


async def test_a_fetch_is_cached_in_the_rows_shape(storage: Storage) -> None:
    """Rows outlive the code that wrote them: a valid file's keeps three keys, an invalid
    one's adds its issues and their count."""
    await load(FakeGateway("mode: blocking\n"), storage)
    assert await storage.kv_get(CONFIG_NAMESPACE, "octo/hello") == VALID_ROW
    await forget_repo_config(storage, "octo/hello")
    with pytest.raises(RepoConfigError) as info:
        await load(FakeGateway("mode: x\n"), storage)
    issue = {"line": 1, "column": 7, "key": "mode", "message": info.value.message}
    assert await storage.kv_get(CONFIG_NAMESPACE, "octo/hello") == {
        "fetched_at": NOW.isoformat(),
        "blob_sha": "blob1",
        "text": "mode: x\n",
        "issues": [issue],
        "problems": 1,
    }
    absent = FakeGateway(None)
    await forget_repo_config(storage, "octo/hello")
    await load(absent, storage)
    expected = {"fetched_at": NOW.isoformat(), "blob_sha": None, "text": None}
    assert await storage.kv_get(CONFIG_NAMESPACE, "octo/hello") == expected


async def test_rows_in_the_stored_shape_are_read_without_a_fetch(storage: Storage) -> None:
    gateway = FakeGateway("mode: advisory\n")
    await storage.kv_put(CONFIG_NAMESPACE, "octo/hello", VALID_ROW)
    assert (await load(gateway, storage)).mode == "blocking"
    await storage.kv_put(CONFIG_NAMESPACE, "octo/hello", INVALID_ROW)
    with pytest.raises(RepoConfigError) as info:
        await load(gateway, storage)
    assert gateway.fetches == 0
    assert [(i.line, i.column, i.key, i.message) for i in info.value.issues] == [
        (1, 7, "mode", "not a mode"),
        (2, 1, None, "bad syntax"),
    ]
    assert str(info.value).endswith("(and 2 more problems)")


async def test_a_valid_files_row_never_reads_a_problem_count(storage: Storage) -> None:
    """Only an invalid file's row holds `problems`; a count beside no issues is not read."""
    await storage.kv_put(
        CONFIG_NAMESPACE, "octo/hello", {**VALID_ROW, "issues": [], "problems": "?"}
    )
    gateway = FakeGateway("mode: advisory\n")
    assert (await load(gateway, storage)).mode == "blocking"
    assert gateway.fetches == 0


async def test_a_stale_row_is_fetched_again_however_it_is_broken(storage: Storage) -> None:
    """Past its time only `fetched_at` is read: the row is about to be replaced."""
    broken = {"fetched_at": (NOW - CONFIG_TTL).isoformat(), "issues": [{"line": "?"}]}
    await storage.kv_put(CONFIG_NAMESPACE, "octo/hello", broken)
    gateway = FakeGateway("mode: blocking\n")
    assert (await load(gateway, storage)).mode == "blocking"
    assert gateway.fetches == 1


# -- off the event loop, parsed once per fetch -------------------------------------------


async def test_parsing_runs_in_a_worker_thread(storage: Storage, parser: CountingParser) -> None:
    assert (await load(FakeGateway("mode: blocking\n"), storage)).mode == "blocking"
    assert parser.threads
    assert threading.get_ident() not in parser.threads


async def test_invalid_file_is_parsed_once_per_fetch(
    storage: Storage, parser: CountingParser
) -> None:
    gateway = FakeGateway("limits:\n  max_files: 0\nmode: x\n")
    errors = []
    for minutes in (0, 1, 2):
        with pytest.raises(RepoConfigError) as info:
            await load(gateway, storage, NOW + timedelta(minutes=minutes))
        errors.append(info.value)
    assert (gateway.fetches, len(parser.threads)) == (1, 1)
    assert {str(e) for e in errors} == {
        ".github/judge.yml line 2, key limits.max_files: expected a whole number of at "
        "least 1, got a number (0) (and 1 more problem)"
    }
    assert [(i.line, i.key) for i in errors[-1].issues] == [(2, "limits.max_files"), (3, "mode")]
    with pytest.raises(RepoConfigError):
        await load(gateway, storage, NOW + CONFIG_TTL)
    assert (gateway.fetches, len(parser.threads)) == (2, 2)


async def test_cached_error_keeps_the_count_of_many_problems(storage: Storage) -> None:
    gateway = FakeGateway("".join(f"k{i}: 1\n" for i in range(300)))
    with pytest.raises(RepoConfigError) as fresh:
        await load(gateway, storage)
    with pytest.raises(RepoConfigError) as cached:
        await load(gateway, storage, NOW + timedelta(minutes=1))
    assert gateway.fetches == 1
    assert str(cached.value) == str(fresh.value)
    assert str(fresh.value).endswith("(and 299 more problems)")
    assert (cached.value.line, cached.value.column, cached.value.key) == (1, 1, "k0")


# -- every failure of the text is a config error -----------------------------------------


HOSTILE = [
    (
        "alias bomb",
        "a0: &a0 [x]\n"
        + "".join(f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]\n" for n in range(1, 10)),
        "more than 10,000 values",
    ),
    ("recursive alias", "paths: &a {include: *a}\n", "the alias *a is used inside"),
    ("5000 [", "[" * 5000, "nested more than 32 levels"),
]


@pytest.mark.parametrize(
    ("text", "fragment"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
async def test_hostile_file_is_a_config_error_parsed_once(
    storage: Storage, parser: CountingParser, text: str, fragment: str
) -> None:
    gateway = FakeGateway(text)
    for minutes in (0, 1):
        with pytest.raises(RepoConfigError) as info:
            await load(gateway, storage, NOW + timedelta(minutes=minutes))
        assert fragment in str(info.value)
    assert (gateway.fetches, len(parser.threads)) == (1, 1)


def raising(exc: BaseException) -> Callable[[str], RepoConfig]:
    def parse(text: str) -> RepoConfig:
        raise exc

    return parse


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            RecursionError("maximum recursion depth exceeded"),
            "the file could not be read (RecursionError: maximum recursion depth exceeded); "
            "it is nested too deeply or an alias refers to itself",
        ),
        (
            MemoryError(),
            "the file could not be read (MemoryError); "
            "it expands to too much once its aliases are followed",
        ),
        (yaml.YAMLError("odd"), "the file could not be read (YAMLError: odd)"),
        (KeyError("x"), "the file could not be read (KeyError: 'x')"),
        (
            ValueError("v" * 300),
            "the file could not be read (ValueError: " + "v" * 185 + "...)",
        ),
    ],
    ids=["recursion", "memory", "yaml", "key", "long message"],
)
async def test_any_parser_failure_is_a_config_error_on_line_1(
    storage: Storage, monkeypatch: pytest.MonkeyPatch, exc: BaseException, expected: str
) -> None:
    counting = CountingParser(raising(exc))
    monkeypatch.setattr(config_store, "parse_repo_config", counting)
    gateway = FakeGateway("mode: advisory\n")
    for minutes in (0, 1):
        with pytest.raises(RepoConfigError) as info:
            await load(gateway, storage, NOW + timedelta(minutes=minutes))
        assert (info.value.line, info.value.column, info.value.key) == (1, 1, None)
        assert info.value.message == expected
        assert str(info.value) == f".github/judge.yml line 1, column 1: {expected}"
    assert len(counting.threads) == 1, "the failure is cached like any invalid file"


@pytest.mark.parametrize(
    "failure",
    [
        GitHubBroken(HTTPStatus.BAD_GATEWAY),
        GraphQLException("Something went wrong", {}),
        aiohttp.ClientConnectionError("connection reset"),
        TimeoutError(),
    ],
    ids=["github 502", "graphql", "connection", "timeout"],
)
async def test_github_errors_propagate_and_are_not_cached(
    storage: Storage, parser: CountingParser, failure: BaseException
) -> None:
    """A failed fetch is not the file's fault: the delivery is retried."""
    gateway = FakeGateway("mode: blocking\n", fail=failure)
    with pytest.raises(type(failure)):
        await load(gateway, storage)
    assert await storage.kv_get(CONFIG_NAMESPACE, "octo/hello") is None
    assert parser.threads == []
    gateway.fail = None
    assert (await load(gateway, storage)).mode == "blocking"
