"""GraphQL answers with `errors` beside `data`, from the fake GitHub itself: its resolvers are
made to fail for one field, as GitHub's do for a field it cannot resolve, and the fake's
GraphQL engine answers partial data with the error's path.

What the judges can do without (a linked issue, a review) is left out and the rest used;
a file at the head they must read, or a pull request's commits, fails with the reason."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from graphql import GraphQLError, GraphQLObjectType

from bot.github.client import (
    GitHubApp,
    GraphQLAnswer,
    GraphQLFieldError,
    MissingFromGitHub,
    read_graphql_answer,
)
from bot.github.gateway import RepoGateway
from bot.github.review_query import HeadQuery, left_out, needed_missing
from bot.storage.base import DeliveryStatus
from tests.support.fakes import github_graphql
from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    QUICK,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.webhook_helpers import webhook_headers

REPO = "octo/hello"
FORBIDDEN = "Resource not accessible by integration"


def forbidden() -> GraphQLError:
    return GraphQLError(FORBIDDEN, extensions={"type": "FORBIDDEN"})


def fail_object_lookups(monkeypatch: pytest.MonkeyPatch, failing: Callable[[str], bool]) -> None:
    """`object(expression:)` fails, as GitHub's resolver can, for the expressions given."""
    repository = github_graphql.github_schema().get_type("Repository")
    assert isinstance(repository, GraphQLObjectType)
    field = repository.fields["object"]
    original = field.resolve
    assert original is not None

    def resolve(source: Any, info: Any, **args: Any) -> Any:
        if failing(str(args.get("expression") or "")):
            raise GraphQLError("Something went wrong while executing your query.")
        return original(source, info, **args)

    monkeypatch.setattr(field, "resolve", resolve)


def fail_closing_issues(monkeypatch: pytest.MonkeyPatch) -> None:
    def closing(*_: Any) -> Any:
        raise forbidden()

    monkeypatch.setattr(github_graphql, "_closing", closing)


def fail_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    original = github_graphql._pull_request

    def pull_request(repo: Any, number: int, *rest: Any) -> dict[str, Any] | None:
        pull = original(repo, number, *rest)
        if pull is not None:

            def commits(*_: Any, **__: Any) -> Any:
                raise forbidden()

            pull["commits"] = commits
        return pull

    monkeypatch.setattr(github_graphql, "_pull_request", pull_request)


def pull_with_files(fake: FakeGitHub) -> tuple[int, str, str]:
    base = fake.repo(REPO).branches["main"]
    sha = fake.add_commit(
        REPO, {"docs/a.md": "# A\n", "docs/b.md": "# B\n"}, branch="topic", author="agent"
    )
    number = fake.add_pull(REPO, None, sha, head_ref="topic", body="Fixes #1", author="agent")
    return number, sha, base


async def gateway_for(github_app: GitHubApp) -> RepoGateway:
    return RepoGateway(await github_app.installation_client(1), REPO)


async def test_a_field_github_cannot_resolve_leaves_the_rest_to_judge(
    github_app: GitHubApp,
    fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_github.add_issue(REPO, title="Greeting", body="Say hi")
    number, sha, _ = pull_with_files(fake_github)
    fake_github.add_comment(REPO, number, "looks fine", author="octo")
    fail_closing_issues(monkeypatch)
    caplog.set_level(logging.WARNING, logger="bot.github.gateway")

    facts = await (await gateway_for(github_app)).head_facts(
        HeadQuery([f"{sha}:docs/a.md", f"{sha}:docs/b.md"], sha, number)
    )

    assert facts.blobs[f"{sha}:docs/a.md"] is not None
    assert facts.blobs[f"{sha}:docs/b.md"] is not None
    assert facts.commits is not None and facts.commits[-1].sha == sha
    assert [r.body for r in facts.remarks] == ["looks fine"]
    assert facts.linked == ()
    [line] = [r.getMessage() for r in caplog.records]
    assert "repository.pullRequest.closingIssuesReferences" in line and FORBIDDEN in line
    assert fake_github.count("graphql") == 1


async def test_a_file_at_the_head_github_could_not_return_fails_with_its_name(
    github_app: GitHubApp, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    number, sha, _ = pull_with_files(fake_github)
    fail_object_lookups(monkeypatch, lambda expression: expression.endswith("docs/b.md"))
    gateway = await gateway_for(github_app)
    with pytest.raises(MissingFromGitHub) as info:
        await gateway.head_facts(HeadQuery([f"{sha}:docs/a.md", f"{sha}:docs/b.md"], sha, number))
    assert str(info.value) == (
        f"{REPO}: GitHub did not return docs/b.md at {sha[:12]}: "
        "Something went wrong while executing your query."
    )


async def test_a_base_file_github_could_not_return_is_read_as_absent(
    github_app: GitHubApp, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base version only serves a computed diff, which then says it has none."""
    number, sha, base = pull_with_files(fake_github)
    fail_object_lookups(monkeypatch, lambda expression: expression.startswith(base))
    query = HeadQuery([f"{sha}:docs/a.md", f"{base}:docs/a.md"], sha, number)
    facts = await (await gateway_for(github_app)).head_facts(query)
    assert facts.blobs[f"{sha}:docs/a.md"] is not None
    assert facts.blobs[f"{base}:docs/a.md"] is None


async def test_a_pull_requests_commits_left_out_fail_with_the_reason(
    github_app: GitHubApp, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its commits name its authors, who may not judge it: not something to guess."""
    number, sha, _ = pull_with_files(fake_github)
    fail_commits(monkeypatch)
    with pytest.raises(MissingFromGitHub, match=f"commits of pull request #{number}: {FORBIDDEN}"):
        await (await gateway_for(github_app)).head_facts(HeadQuery([], sha, number))


async def test_a_config_file_github_could_not_return_is_not_read_as_absent(
    github_app: GitHubApp, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Absent, `.github/judge.yml` would mean the defaults (advisory): never guessed."""
    fail_object_lookups(monkeypatch, lambda expression: "judge.yml" in expression)
    gateway = await gateway_for(github_app)
    with pytest.raises(MissingFromGitHub, match=r"did not return \.github/judge\.yml at main"):
        await gateway.blobs(["main:.github/judge.yml"])
    assert await gateway.blobs(["main:no-such-file"]) == {"main:no-such-file": None}


async def test_strict_graphql_still_raises_on_any_error(
    github_app: GitHubApp, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_object_lookups(monkeypatch, lambda _: True)
    query = (
        'query { repository(owner: "octo", name: "hello") { object(expression: "main:a") { id } } }'
    )
    client = await github_app.installation_client(1)
    answer = await client.graphql_answer(query)
    assert answer.data == {"repository": {"object": None}}
    assert answer.errors[0].path == ("repository", "object")
    with pytest.raises(Exception, match="Something went wrong"):
        await github_app.graphql(1, query)


# -- pure reading ------------------------------------------------------------------------------


def test_an_error_covers_its_field_and_what_is_inside_it() -> None:
    error = GraphQLFieldError(("repository", "pullRequest"), "gone")
    assert error.covers(("repository", "pullRequest", "commits"))
    assert not error.covers(("repository", "f0"))
    assert GraphQLFieldError((), "all of it").covers(("repository", "f0"))


def test_needed_missing_only_for_what_the_judges_read() -> None:
    head, base = "a" * 40, "b" * 40
    query = HeadQuery([f"{head}:x.md", f"{base}:x.md"], head)
    absent = GraphQLAnswer({"repository": {"f0": None, "f1": None}})
    assert needed_missing(absent, query) is None, "no error: the file does not exist"
    base_only = GraphQLAnswer(absent.data, (GraphQLFieldError(("repository", "f1"), "x"),))
    assert needed_missing(base_only, query) is None
    whole = GraphQLAnswer({"repository": None}, (GraphQLFieldError(("repository",), "no"),))
    assert needed_missing(whole, query) == f"GitHub did not return x.md at {head[:12]}: no"


def test_the_log_line_lists_a_few_fields() -> None:
    errors = tuple(GraphQLFieldError(("r", f"f{n}"), "bad") for n in range(7))
    text = left_out(GraphQLAnswer({}, errors), limit=2)
    assert text == "r.f0: bad; r.f1: bad; and 5 more"


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (200, b'{"errors": [{"message": "nope"}]}', "nope"),
        (200, b'{"data": null, "errors": [{"message": "nope"}]}', "nope"),
        (200, b"{}", "no data"),
        (200, b"<html>", "not a JSON object"),
        (401, b'{"message": "Bad credentials"}', "Bad credentials"),
        (502, b"<html>", "Bad Gateway"),
    ],
)
def test_no_data_is_no_answer(status: int, body: bytes, error: str) -> None:
    with pytest.raises(Exception, match=error):
        read_graphql_answer(status, {}, body)


def test_partial_data_is_an_answer() -> None:
    body = b'{"data": {"a": 1, "b": null}, "errors": [{"message": "m", "path": ["b"]}]}'
    answer = read_graphql_answer(200, {}, body)
    assert answer.data == {"a": 1, "b": None}
    assert answer.missing(("b",)) == GraphQLFieldError(("b",), "m")
    assert answer.missing(("a",)) is None


# -- end to end ------------------------------------------------------------------------------


async def test_a_pull_request_is_judged_though_github_left_a_field_out(
    advisory_bot: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the whole judgment failed on any GraphQL error: parked, neutral, no model
    call. Now the judges read the files and decide."""
    bot = advisory_bot
    bot.llm.script(QUICK, scores(*ACCEPT))
    bot.llm.script(DEEP, scores(*ACCEPT))
    fail_closing_issues(monkeypatch)
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha, body="Fixes #1")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    assert (run.status, run.conclusion) == ("completed", "success")
    assert bot.llm.requests_for(QUICK), "a judge was asked"


async def test_a_file_github_could_not_return_fails_the_judgment_by_name(
    advisory_bot: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = advisory_bot
    fail_object_lookups(monkeypatch, lambda expression: expression.endswith("docs/notes.md"))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    payload = json.dumps(pull_request_payload(bot.fake, "opened", number)).encode()
    response = await bot.client.post(
        bot.webhook_path, data=payload, headers=webhook_headers("pull_request", payload)
    )
    delivery_id = (await response.json())["delivery"]
    async with asyncio.timeout(30):
        while (stored := await bot.storage.get_delivery(delivery_id)) is None or (
            stored.status is not DeliveryStatus.FAILED
        ):
            await asyncio.sleep(0.02)
    assert stored.last_error is not None
    assert f"MissingFromGitHub: {REPO}: GitHub did not return docs/notes.md" in stored.last_error
    assert not bot.llm.requests_for(QUICK), "no judge reads a file it does not have"
