"""The head query (blobs, CI, commits, reviews, conversation, closing issues) against the
fake GitHub, which validates every query against GitHub's published GraphQL schema."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import parse, validate

from bot.github.client import GitHubApp
from bot.github.gateway import RepoGateway
from bot.github.review_query import (
    HeadQuery,
    build_commits_query,
    build_head_query,
    parse_commits,
    parse_head_answer,
    remote_file,
)
from bot.github.types import CiCheck, Remark
from tests.support.fakes.github_graphql import github_schema
from tests.support.fakes.github_server import FakeGitHub

REPO = "octo/hello"


async def gateway_for(github_app: GitHubApp) -> RepoGateway:
    return RepoGateway(await github_app.installation_client(1), REPO)


def pull_with_ci(fake: FakeGitHub) -> tuple[int, str]:
    sha = fake.add_commit(REPO, {"src/app.py": "print('hi')\n"}, branch="topic", author="agent")
    number = fake.add_pull(REPO, None, sha, head_ref="topic", body="Fixes #1", author="agent")
    return number, sha


@pytest.mark.parametrize("number", [None, 7])
def test_the_queries_are_valid_against_githubs_schema(number: int | None) -> None:
    text, variables = build_head_query(HeadQuery(["a:b", 'x:"q".md'], "f" * 40, number), "o", "r")
    assert validate(github_schema(), parse(text)) == []
    assert ("number" in variables) is (number is not None)
    text, _ = build_commits_query("o", "r", 7, "10")
    assert validate(github_schema(), parse(text)) == []


async def test_one_query_reads_blobs_ci_commits_and_remarks(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    issue = fake_github.add_issue(REPO, title="Add a greeting", body="Say hi")
    assert issue == 1
    number, sha = pull_with_ci(fake_github)
    fake_github.require_checks(REPO, "main", "tests")
    fake_github.add_check_run(
        REPO, sha, "tests", conclusion="failure", title="2 failed", summary="x"
    )
    fake_github.add_check_run(REPO, sha, "lint", conclusion=None, app_slug="linter", app_id=9)
    fake_github.add_status(REPO, sha, "ci/build", "error", description="runner lost")
    fake_github.set_permission(REPO, "maintainer", "write")
    fake_github.add_pull_review(
        REPO, number, "maintainer", "Please add tests", comments=[("src/app.py", "name it")]
    )
    fake_github.add_pull_review(REPO, number, "passer-by", "looks odd")
    fake_github.add_comment(REPO, number, "also update the docs", author="octo")
    gateway = await gateway_for(github_app)

    facts = await gateway.head_facts(HeadQuery([f"{sha}:src/app.py"], sha, number))

    assert facts.blobs[f"{sha}:src/app.py"] is not None
    by_name = {c.name: c for c in facts.ci}
    assert by_name["tests"] == CiCheck(
        "tests", "check", "failure", True, "2 failed\n\nx", "ci", 15368
    )
    assert by_name["lint"].state == "pending" and by_name["lint"].required is False
    assert by_name["ci/build"] == CiCheck("ci/build", "status", "error", False, "runner lost")
    assert facts.commits is not None and facts.commits[-1].sha == sha
    assert facts.commits[-1].author_login == "agent"
    assert Remark("maintainer", "review", "Please add tests", True) in facts.remarks
    assert Remark("maintainer", "review comment", "name it", True, path="src/app.py") in (
        facts.remarks
    )
    assert Remark("passer-by", "review", "looks odd", False) in facts.remarks
    assert Remark("octo", "comment", "also update the docs", association="OWNER") in facts.remarks
    [linked] = facts.linked
    assert (linked.number, linked.title, linked.repository) == (1, "Add a greeting", REPO)
    assert fake_github.count("graphql") == 1


async def test_a_push_asks_for_ci_without_a_pull_request(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    sha = fake_github.add_commit(REPO, {"a.md": "a\n"}, branch="topic")
    fake_github.add_check_run(REPO, sha, "tests", conclusion="timed_out")
    gateway = await gateway_for(github_app)
    facts = await gateway.head_facts(HeadQuery([], sha))
    assert facts.ci == (CiCheck("tests", "check", "timed_out", None, "", "ci", 15368),)
    assert facts.commits is None and facts.remarks == ()


async def test_a_commit_nothing_reported_on_has_no_ci(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    sha = fake_github.add_commit(REPO, {"a.md": "a\n"}, branch="topic")
    facts = await (await gateway_for(github_app)).head_facts(HeadQuery([], sha))
    assert facts.ci == ()


async def test_older_commits_are_paged_back(github_app: GitHubApp, fake_github: FakeGitHub) -> None:
    head = fake_github.repo(REPO).branches["main"]
    for n in range(130):
        head = fake_github.add_commit(
            REPO, {"n.txt": f"{n}\n"}, parents=[head], branch="long", message=f"step {n}"
        )
    number = fake_github.add_pull(REPO, None, head, head_ref="long")
    facts = await (await gateway_for(github_app)).head_facts(HeadQuery([], head, number))
    assert facts.commits is not None
    assert [c.message for c in facts.commits] == [f"step {n}" for n in range(130)]
    assert fake_github.count("graphql") == 2


def test_unreadable_parts_of_an_answer_read_as_nothing() -> None:
    query = HeadQuery(["a:b"], "f" * 40, 3)
    assert parse_head_answer(None, query).commits is None
    data: dict[str, Any] = {
        "repository": {
            "f0": {"isBinary": True, "text": None},
            "head": {"statusCheckRollup": {"contexts": {"nodes": [{"__typename": "Other"}, 5]}}},
            "pullRequest": {
                "commits": None,
                "reviews": {"nodes": [{"author": None, "body": " ", "comments": None}]},
                "comments": {"nodes": [{"author": {"__typename": "Bot", "login": "ci"}}]},
                "closingIssuesReferences": {"nodes": [{"number": "x"}]},
            },
        }
    }
    facts = parse_head_answer(data, query)
    assert facts.blobs == {"a:b": None} and facts.ci == () and facts.commits == ()
    assert facts.remarks == (Remark("ci", "comment", "", association="NONE", is_bot=True),)
    assert facts.linked[0].number == 0
    assert parse_commits({"pageInfo": "?", "nodes": []}) == ((), None)
    assert remote_file({"text": "t", "isTruncated": True}) is not None
