"""GitHub's real GraphQL schema with resolvers for the part the bot uses:

* blobs by `repository(owner:, name:) { object(expression: "REV:path") { ... on Blob } }`;
* a commit (`object(oid:)` or an expression naming one): `oid`, `message`, `author`,
  `committer`, and `statusCheckRollup { state contexts { nodes { CheckRun | StatusContext } } }`
  (every app's latest check runs and the latest status of each context; `isRequired` from
  the pull request base branch's required checks);
* `pullRequest(number:)`: `commits` (newest `last` first, paged back with `before`),
  `reviews` with `authorCanPushToRepository` and inline `comments`, the conversation
  `comments` with `authorAssociation`, `closingIssuesReferences` read from the body, and
  `mergeQueueEntry` (GitHub's merge queue, `github_merge_queue`);
* the mutations `enqueuePullRequest`, `dequeuePullRequest`, `enablePullRequestAutoMerge` and
  `disablePullRequestAutoMerge`
  over `github_merge_queue.MergeQueueModel`, refusing as GitHub does (`UNPROCESSABLE`).

Every query is validated against the full published schema; only these fields resolve to data.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    build_schema,
)

from tests.support.fakes.github_merge_queue import MergeQueueModel
from tests.support.fakes.github_model import CheckRun, CommitStatus, Pull, Repo, is_binary

SCHEMA_PATH = Path(__file__).parents[2] / "fixtures" / "github" / "graphql" / "schema.graphql"


@dataclass(frozen=True)
class GraphQLContext:
    """What resolvers may see: repositories the calling installation can reach."""

    find_repo: Callable[[str, str], Repo | None]
    installation_id: int
    app_slug: str = "judge-bot"
    merge_queue: MergeQueueModel | None = None


def _not_found(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": "NOT_FOUND"})


def _resolve_repository(
    _root: Any, info: GraphQLResolveInfo[GraphQLContext], **args: Any
) -> dict[str, Any]:
    context: GraphQLContext = info.context
    owner, name = str(args["owner"]), str(args["name"])
    repo = context.find_repo(owner, name)
    if repo is None or repo.installation_id != context.installation_id:
        raise _not_found(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
    return {
        "_repo": repo,
        "name": repo.name,
        "nameWithOwner": repo.full_name,
        "isPrivate": repo.private,
        "databaseId": repo.id,
        "pullRequest": lambda _info, number: _pull_request(repo, int(number), context.merge_queue),
    }


def _blob(sha: str, data: bytes) -> dict[str, Any]:
    binary = is_binary(data)
    return {
        "__typename": "Blob",
        "oid": sha,
        "abbreviatedOid": sha[:7],
        "id": f"B_{sha}",
        "byteSize": len(data),
        "isBinary": binary,
        "isTruncated": False,
        "text": None if binary else data.decode("utf-8", "replace"),
    }


def _resolve_object(
    source: dict[str, Any], _info: GraphQLResolveInfo[GraphQLContext], **args: Any
) -> Any:
    repo: Repo = source["_repo"]
    if "oid" in args and args["oid"] is not None:
        oid = str(args["oid"])
        if oid in repo.blobs:
            return _blob(oid, repo.blobs[oid])
        if oid in repo.commits:
            return _commit(repo, oid)
        if oid in repo.trees:
            return {"__typename": "Tree", "oid": oid}
        return None
    expression = str(args.get("expression") or "")
    rev, sep, path = expression.partition(":")
    sha = repo.resolve(rev)
    if sha is None:
        return None
    if not sep:
        return _commit(repo, sha)
    if path in ("", "/"):
        return {"__typename": "Tree", "oid": repo.commits[sha].tree}
    entry = repo.entry_at(sha, path)
    if entry is None:
        return None
    if entry.kind == "tree":
        return {"__typename": "Tree", "oid": entry.sha}
    return _blob(entry.sha, repo.blobs[entry.sha])


def _actor(login: str) -> dict[str, Any]:
    kind = "Bot" if login.endswith("[bot]") else "User"
    return {"__typename": kind, "login": login.removesuffix("[bot]") if kind == "Bot" else login}


def _git_actor(login: str) -> dict[str, Any]:
    return {"name": login, "email": f"{login}@users.noreply.github.com", "user": {"login": login}}


def _commit(repo: Repo, sha: str) -> dict[str, Any]:
    commit = repo.commits[sha]
    return {
        "__typename": "Commit",
        "oid": sha,
        "message": commit.message,
        "author": _git_actor(commit.author),
        "committer": _git_actor(commit.author),
        "statusCheckRollup": lambda info: _rollup(repo, sha, info.context.app_slug),
    }


def _required(repo: Repo, name: str) -> Callable[..., bool]:
    def is_required(
        _info: Any, pullRequestNumber: int | None = None, pullRequestId: str | None = None
    ) -> bool:
        pull = repo.pulls.get(pullRequestNumber) if pullRequestNumber is not None else None
        if pull is None:
            raise GraphQLError("isRequired needs the number of a pull request of the repository")
        return name in repo.required_checks.get(pull.base_ref, ())

    return is_required


def _check_run_node(repo: Repo, run: CheckRun, own_slug: str) -> dict[str, Any]:
    return {
        "__typename": "CheckRun",
        "name": run.name,
        "status": run.status.upper(),
        "conclusion": run.conclusion.upper() if run.conclusion else None,
        "title": run.output.get("title"),
        "summary": run.output.get("summary"),
        "isRequired": _required(repo, run.name),
        "checkSuite": {"app": {"databaseId": run.app_id, "slug": run.app_slug or own_slug}},
    }


def _status_node(repo: Repo, status: CommitStatus) -> dict[str, Any]:
    return {
        "__typename": "StatusContext",
        "context": status.context,
        "state": status.state.upper(),
        "description": status.description,
        "isRequired": _required(repo, status.context),
    }


def _rollup(repo: Repo, sha: str, own_slug: str) -> dict[str, Any] | None:
    nodes = [_check_run_node(repo, r, own_slug) for r in repo.latest_check_runs(sha)]
    nodes += [_status_node(repo, s) for s in repo.latest_statuses(sha)]
    if not nodes:
        return None  # GitHub answers null for a commit nothing reported on
    states = {str(n.get("conclusion") or n.get("state") or "PENDING") for n in nodes}
    bad = {"FAILURE", "ERROR", "TIMED_OUT", "CANCELLED", "STARTUP_FAILURE", "ACTION_REQUIRED"}
    state = (
        "FAILURE"
        if states & bad
        else "PENDING"
        if states - {"SUCCESS", "NEUTRAL", "SKIPPED"}
        else "SUCCESS"
    )

    def contexts(_info: Any, first: int | None = None, **_: Any) -> dict[str, Any]:
        shown = nodes[: first or len(nodes)]
        return {"totalCount": len(nodes), "nodes": shown}

    return {"state": state, "contexts": contexts}


def _page(items: list[Any], last: int | None, before: str | None) -> dict[str, Any]:
    """A backward page (`last`, `before`) of a connection whose cursors are indexes."""
    end = int(before) if before is not None else len(items)
    start = max(0, end - (last or end))
    return {
        "totalCount": len(items),
        "nodes": items[start:end],
        "pageInfo": {
            "hasPreviousPage": start > 0,
            "startCursor": str(start),
            "hasNextPage": end < len(items),
            "endCursor": str(end),
        },
    }


def _pull_request(
    repo: Repo, number: int, merge_queue: MergeQueueModel | None = None
) -> dict[str, Any] | None:
    pull = repo.pulls.get(number)
    if pull is None:
        return None
    issue = repo.issues[number]
    shas = repo.commits_between(pull.base_sha, pull.head_sha)
    commits = [{"commit": _commit(repo, sha)} for sha in shas]
    comments = [
        {
            "author": _actor(c.author),
            "authorAssociation": _association(repo, pull, c.author),
            "body": c.body,
        }
        for c in sorted(repo.comments.values(), key=lambda c: c.id)
        if c.issue_number == number
    ]
    return {
        "number": number,
        "commits": lambda _i, last=None, before=None, **_: _page(commits, last, before),
        "reviews": lambda _i, last=None, before=None, **_: _page(
            _reviews(repo, pull), last, before
        ),
        "comments": lambda _i, last=None, before=None, **_: _page(comments, last, before),
        "closingIssuesReferences": lambda _i, first=None, **_: {
            "nodes": _closing(repo, issue.body or "")[: first or None]
        },
        "mergeQueueEntry": lambda _i: (
            None if merge_queue is None else merge_queue.entry_of(repo, pull)
        ),
    }


def _association(repo: Repo, pull: Pull, login: str) -> str:
    if login == repo.owner:
        return "OWNER"
    if login in repo.permissions:
        return "COLLABORATOR"
    authors = {
        repo.commits[sha].author for sha in repo.commits_between(pull.base_sha, pull.head_sha)
    }
    return "CONTRIBUTOR" if login in authors else "NONE"


def _reviews(repo: Repo, pull: Pull) -> list[dict[str, Any]]:
    return [
        {
            "author": _actor(review.login),
            "authorCanPushToRepository": repo.can_push(review.login),
            "state": review.state,
            "body": review.body,
            "comments": lambda _i, first=None, _r=review, **_: {
                "nodes": [{"path": c.path, "body": c.body} for c in _r.comments][: first or None]
            },
        }
        for review in pull.reviews
    ]


_CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)", re.IGNORECASE)


def _closing(repo: Repo, body: str) -> list[dict[str, Any]]:
    """Issues of the repository the body closes with a keyword, as GitHub links them."""
    found: list[dict[str, Any]] = []
    for match in _CLOSES.finditer(body):
        issue = repo.issues.get(int(match.group(1)))
        if (
            issue is not None
            and not issue.is_pull
            and all(f["number"] != issue.number for f in found)
        ):
            found.append(
                {
                    "number": issue.number,
                    "title": issue.title,
                    "body": issue.body or "",
                    "repository": {"nameWithOwner": repo.full_name},
                }
            )
    return found


def _queue_model(info: GraphQLResolveInfo[GraphQLContext]) -> tuple[MergeQueueModel, int, str]:
    context: GraphQLContext = info.context
    if context.merge_queue is None:
        raise GraphQLError("this fake GitHub has no merge queue model")
    return context.merge_queue, context.installation_id, f"{context.app_slug}[bot]"


def _enqueue(_root: Any, info: GraphQLResolveInfo[GraphQLContext], **args: Any) -> Any:
    fields = args["input"]
    model, installation, login = _queue_model(info)
    entry = model.enqueue(
        str(fields["pullRequestId"]),
        installation,
        fields.get("expectedHeadOid"),
        bool(fields.get("jump")),
        login,
    )
    return {"clientMutationId": fields.get("clientMutationId"), "mergeQueueEntry": entry}


def _dequeue(_root: Any, info: GraphQLResolveInfo[GraphQLContext], **args: Any) -> Any:
    fields = args["input"]
    model, installation, _ = _queue_model(info)
    entry = model.dequeue(str(fields["id"]), installation)
    return {"clientMutationId": fields.get("clientMutationId"), "mergeQueueEntry": entry}


def _auto_merge(_root: Any, info: GraphQLResolveInfo[GraphQLContext], **args: Any) -> Any:
    fields = args["input"]
    model, installation, _ = _queue_model(info)
    method = str(fields.get("mergeMethod") or "MERGE").lower()
    number = model.enable_auto_merge(
        str(fields["pullRequestId"]), installation, fields.get("expectedHeadOid"), method
    )
    return {"clientMutationId": fields.get("clientMutationId"), "pullRequest": {"number": number}}


def _disable_auto_merge(_root: Any, info: GraphQLResolveInfo[GraphQLContext], **args: Any) -> Any:
    fields = args["input"]
    model, installation, _ = _queue_model(info)
    number = model.disable_auto_merge(str(fields["pullRequestId"]), installation)
    return {"clientMutationId": fields.get("clientMutationId"), "pullRequest": {"number": number}}


def _type_of(value: Any, *_: Any) -> str:
    return str(value["__typename"])


@functools.cache
def github_schema() -> GraphQLSchema:
    """The published schema (loaded once per process) with the fake's resolvers attached."""
    # The published SDL breaks two SDL rules graphql-core enforces (see PROVENANCE.md); queries
    # are still validated in full against it.
    schema = build_schema(SCHEMA_PATH.read_text(), assume_valid_sdl=True, assume_valid=True)
    query = schema.get_type("Query")
    repository = schema.get_type("Repository")
    git_object = schema.get_type("GitObject")
    assert isinstance(query, GraphQLObjectType)
    assert isinstance(repository, GraphQLObjectType)
    assert isinstance(git_object, GraphQLInterfaceType)
    query.fields["repository"].resolve = _resolve_repository
    mutation = schema.get_type("Mutation")
    assert isinstance(mutation, GraphQLObjectType)
    mutation.fields["enqueuePullRequest"].resolve = _enqueue
    mutation.fields["dequeuePullRequest"].resolve = _dequeue
    mutation.fields["enablePullRequestAutoMerge"].resolve = _auto_merge
    mutation.fields["disablePullRequestAutoMerge"].resolve = _disable_auto_merge
    repository.fields["object"].resolve = _resolve_object
    git_object.resolve_type = _type_of
    return schema
