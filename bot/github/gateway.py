"""Every GitHub operation the judging flows need, for one repository, as small typed calls.

The flows decide; this module only carries requests out. Each method is one REST or
GraphQL round trip (list methods may page), and only operations in GitHub's REST
description subset are used. A GraphQL answer with errors is read for what came back
(`review_query`): only what the judges need, left out, raises `MissingFromGitHub`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from bot.github.client import GitHubClient, GraphQLAnswer, MissingFromGitHub
from bot.github.review_query import (
    COMMITS_PAGE,
    MAX_COMMITS,
    HeadFacts,
    HeadQuery,
    build_commits_query,
    build_head_query,
    left_out,
    missing_blob,
    missing_commits,
    needed_missing,
    parse_commits,
    parse_head_answer,
    remote_file,
)
from bot.github.types import (
    ChangedPath,
    CommitInfo,
    RemoteFile,
    changed_from_diff_entry,
    commit_from_rest,
)

log = logging.getLogger(__name__)


class RepoGateway:
    def __init__(self, client: GitHubAPI, full_name: str) -> None:
        self.client = client
        self.full_name = full_name
        self.owner, self.name = full_name.split("/", 1)

    def _vars(self, **more: Any) -> dict[str, Any]:
        return {"owner": self.owner, "repo": self.name, **more}

    async def _graphql(self, query: str, **variables: Any) -> GraphQLAnswer:
        """The answer with its partial data (`GitHubClient.graphql_answer`); another client
        reads it strictly, as gidgethub does."""
        if isinstance(self.client, GitHubClient):
            return await self.client.graphql_answer(query, **variables)
        data = await self.client.graphql(query, **variables)
        return GraphQLAnswer(data if isinstance(data, dict) else {})

    # -- reading ---------------------------------------------------------------------
    async def pull_files(self, number: int) -> list[ChangedPath]:
        files: list[ChangedPath] = []
        async for item in self.client.getiter(
            "/repos/{owner}/{repo}/pulls/{pull_number}/files{?per_page}",
            self._vars(pull_number=number, per_page=100),
        ):
            files.append(changed_from_diff_entry(item))
        return files

    async def pull(self, number: int) -> dict[str, Any]:
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/pulls/{pull_number}", self._vars(pull_number=number)
        )
        return dict(answer)

    async def compare(self, base: str, head: str) -> tuple[list[ChangedPath], list[CommitInfo]]:
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}", self._vars(basehead=f"{base}...{head}")
        )
        files = [changed_from_diff_entry(item) for item in answer.get("files") or []]
        commits = [commit_from_rest(item) for item in answer.get("commits") or []]
        return files, commits

    async def blobs(self, expressions: Sequence[str]) -> dict[str, RemoteFile | None]:
        """Many blobs (`REF:path` expressions) in a single GraphQL query; None for a missing
        or binary file. One round trip whatever the count, instead of one REST call a file.
        Raises MissingFromGitHub for one GitHub could not resolve: absent is not the same."""
        if not expressions:
            return {}
        fields = "\n".join(
            f"    f{index}: object(expression: {json.dumps(expression)}) "
            "{ ... on Blob { oid text isBinary isTruncated } }"
            for index, expression in enumerate(expressions)
        )
        query = (
            "query($owner: String!, $name: String!) {\n"
            f"  repository(owner: $owner, name: $name) {{\n{fields}\n  }}\n}}"
        )
        answer = await self._graphql(query, owner=self.owner, name=self.name)
        self._check(answer, missing_blob(answer, expressions, lambda _: True), "blobs")
        repository = answer.data.get("repository") or {}
        return {
            expression: remote_file(repository.get(f"f{index}"))
            for index, expression in enumerate(expressions)
        }

    async def head_facts(self, query: HeadQuery) -> HeadFacts:
        """Blobs, the head commit's CI and (for a pull request) its commits, reviews,
        conversation and closing issues, in one GraphQL query (`review_query`); a pull
        request with more commits than a page costs one more query per older page."""
        text, variables = build_head_query(query, self.owner, self.name)
        answer = await self._graphql(text, **variables)
        self._check(answer, needed_missing(answer, query), query.head_sha[:12])
        facts = parse_head_answer(answer.data, query)
        if query.pull_number is None or facts.commits is None:
            return facts
        commits, older = facts.commits, facts.older_commits
        pages = MAX_COMMITS // COMMITS_PAGE - 1
        while older is not None and pages > 0:
            text, variables = build_commits_query(self.owner, self.name, query.pull_number, older)
            answer = await self._graphql(text, **variables)
            missing = missing_commits(answer, query.pull_number)
            self._check(answer, missing, f"#{query.pull_number}")
            page = (answer.data.get("repository") or {}).get("pullRequest") or {}
            earlier, older = parse_commits(page.get("commits"))
            commits = earlier + commits
            pages -= 1
        return replace(facts, commits=commits, older_commits=older)

    def _check(self, answer: GraphQLAnswer, missing: str | None, about: str) -> None:
        """Raise for what the judges need and GitHub left out; say in one line what else it
        left out, and go on with the rest."""
        if missing is not None:
            raise MissingFromGitHub(f"{self.full_name}: {missing}")
        if answer.errors:
            log.warning(
                "GitHub's answer about %s (%s) left out %s; going on with the rest",
                self.full_name,
                about,
                left_out(answer),
            )

    async def permission(self, login: str) -> tuple[str, str | None]:
        """(permission, role_name) of a user; ("none", None) for a non-collaborator."""
        try:
            answer = await self.client.getitem(
                "/repos/{owner}/{repo}/collaborators/{username}/permission",
                self._vars(username=login),
            )
        except BadRequest as exc:
            if exc.status_code == 404:
                return "none", None
            raise
        return str(answer.get("permission", "none")), answer.get("role_name")

    # -- check runs -------------------------------------------------------------------
    async def find_check_run(
        self, head_sha: str, name: str, app_id: str | None
    ) -> tuple[int, str] | None:
        """The latest run called `name` on `head_sha` (the App's own when `app_id` is
        given): its id and page, or None."""
        run = await self.latest_check_run(head_sha, name, app_id)
        if run is None:
            return None
        return int(run["id"]), str(run.get("html_url") or "")

    async def latest_check_run(
        self, head_sha: str, name: str, app_id: str | None
    ) -> dict[str, Any] | None:
        """The latest run called `name` on `head_sha` (the App's own when `app_id` is
        given) as GitHub answers it, or None."""
        query: dict[str, Any] = {"check_name": name, "filter": "latest", "per_page": 1}
        if app_id is not None:
            query["app_id"] = app_id
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs{?check_name,filter,app_id,per_page}",
            self._vars(ref=head_sha, **query),
        )
        runs = answer.get("check_runs") or []
        return dict(runs[0]) if runs else None

    async def create_check_run(self, fields: Mapping[str, Any]) -> tuple[int, str]:
        """Creates a run; returns its id and the page people open."""
        answer = await self.client.post(
            "/repos/{owner}/{repo}/check-runs", self._vars(), data=dict(fields)
        )
        return int(answer["id"]), str(answer.get("html_url") or "")

    async def update_check_run(self, check_run_id: int, fields: Mapping[str, Any]) -> None:
        await self.client.patch(
            "/repos/{owner}/{repo}/check-runs/{check_run_id}",
            self._vars(check_run_id=check_run_id),
            data=dict(fields),
        )

    # -- issues and comments ------------------------------------------------------------
    async def issue(self, number: int) -> dict[str, Any]:
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/issues/{issue_number}", self._vars(issue_number=number)
        )
        return dict(answer)

    async def create_issue(self, title: str, body: str, labels: Sequence[str]) -> int:
        answer = await self.client.post(
            "/repos/{owner}/{repo}/issues",
            self._vars(),
            data={"title": title, "body": body, "labels": list(labels)},
        )
        return int(answer["number"])

    async def reopen_issue(self, number: int) -> None:
        await self.client.patch(
            "/repos/{owner}/{repo}/issues/{issue_number}",
            self._vars(issue_number=number),
            data={"state": "open"},
        )

    async def close_issue(self, number: int) -> None:
        await self.client.patch(
            "/repos/{owner}/{repo}/issues/{issue_number}",
            self._vars(issue_number=number),
            data={"state": "closed", "state_reason": "completed"},
        )

    async def comment(self, number: int, body: str) -> None:
        await self.client.post(
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            self._vars(issue_number=number),
            data={"body": body},
        )

    async def open_issues_with_label(self, label: str) -> list[dict[str, Any]]:
        return [
            dict(item)
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/issues{?labels,state,per_page}",
                self._vars(labels=label, state="open", per_page=100),
            )
        ]

    async def ensure_label(self, name: str, color: str, description: str) -> None:
        try:
            await self.client.getitem("/repos/{owner}/{repo}/labels/{name}", self._vars(name=name))
        except BadRequest as exc:
            if exc.status_code != 404:
                raise
            await self.client.post(
                "/repos/{owner}/{repo}/labels",
                self._vars(),
                data={"name": name, "color": color, "description": description},
            )
