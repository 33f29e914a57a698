"""The one GraphQL query that reads what judging needs at a head sha, once the changed
files are known:

    repository(owner:, name:) {
      f0: object(expression: "REV:path")  the files at the head, and at the base for the
      ...                                 diffs GitHub did not give (`Blob` text)
      head: object(oid: $head)            CI on the head commit: `statusCheckRollup`,
                                          other apps' check runs and commit statuses
      pullRequest(number: $number) {      pull requests only:
        commits(last: 100)                  its commits (older pages fetched separately)
        reviews(last: 30)                   reviews and their inline comments, with
                                            `authorCanPushToRepository`
        comments(last: 30)                  the conversation
        closingIssuesReferences(first: 3)   the issues it closes
      }
    }

Pure: `build_head_query` writes the text and variables, `parse_head_answer` reads the
answer into the plain types of `bot.github.types`. Only fields of GitHub's published
schema are asked for (the fake GitHub validates every query against it).

Partial answers. GitHub answers a field it cannot resolve (a closing issue in a repository
the App cannot read, a check's `isRequired`) with null and an entry in `errors`, the rest
intact. The judges go on with what came back (a CI check, a review, a linked issue fewer),
except for what they cannot do without (`needed_missing`): a file at the head they are to
read, and a pull request's commits (its authors decide who may judge it). Those fail the
judgment, saying which and GitHub's reason. A file at the base only serves a computed diff,
which says it has no base.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.github.client import GraphQLAnswer
from bot.github.types import CiCheck, CommitInfo, LinkedIssue, Remark, RemoteFile

CI_CONTEXTS = 100
COMMITS_PAGE = 100
MAX_COMMITS = 300
REVIEWS = 30
REVIEW_COMMENTS = 20
COMMENTS = 30
CLOSING_ISSUES = 3
EXCERPT_LIMIT = 2000
"""Characters of a check's title and summary kept when read; the prompt cuts further."""

_BLOB = "{ ... on Blob { oid text isBinary isTruncated } }"
_ACTOR = "author { __typename login }"
_COMMIT_FIELDS = (
    "pageInfo { hasPreviousPage startCursor } "
    "nodes { commit { oid message "
    "author { name user { login } } committer { name user { login } } } }"
)


@dataclass(frozen=True)
class HeadQuery:
    """What to ask: blob expressions (`REV:path`), the head commit for CI, and the pull
    request (None for a push)."""

    expressions: Sequence[str]
    head_sha: str
    pull_number: int | None = None


@dataclass(frozen=True)
class HeadFacts:
    """The answer. `commits` is None for a push; `older_commits` is the cursor of the
    page before the newest commits when the pull request has more."""

    blobs: dict[str, RemoteFile | None] = field(default_factory=dict)
    ci: tuple[CiCheck, ...] = ()
    commits: tuple[CommitInfo, ...] | None = None
    older_commits: str | None = None
    remarks: tuple[Remark, ...] = ()
    linked: tuple[LinkedIssue, ...] = ()


def _ci_selection(pull_number: int | None) -> str:
    required = "" if pull_number is None else " isRequired(pullRequestNumber: $number)"
    return (
        f"head: object(oid: $head) {{ ... on Commit {{ statusCheckRollup {{ "
        f"contexts(first: {CI_CONTEXTS}) {{ nodes {{ __typename "
        "... on CheckRun { name status conclusion title summary"
        f"{required} checkSuite {{ app {{ databaseId slug }} }} }} "
        f"... on StatusContext {{ context state description{required} }} "
        "} } } } }"
    )


def _pull_selection() -> str:
    return (
        "pullRequest(number: $number) { "
        f"commits(last: {COMMITS_PAGE}) {{ {_COMMIT_FIELDS} }} "
        f"reviews(last: {REVIEWS}) {{ nodes {{ {_ACTOR} authorCanPushToRepository body "
        f"comments(first: {REVIEW_COMMENTS}) {{ nodes {{ path body }} }} }} }} "
        f"comments(last: {COMMENTS}) {{ nodes {{ {_ACTOR} authorAssociation body }} }} "
        f"closingIssuesReferences(first: {CLOSING_ISSUES}) {{ nodes {{ number title body "
        "repository { nameWithOwner } } } }"
    )


def build_head_query(query: HeadQuery, owner: str, name: str) -> tuple[str, dict[str, Any]]:
    fields = [
        f"f{index}: object(expression: {json.dumps(expression)}) {_BLOB}"
        for index, expression in enumerate(query.expressions)
    ]
    fields.append(_ci_selection(query.pull_number))
    params = "$owner: String!, $name: String!, $head: GitObjectID!"
    variables: dict[str, Any] = {"owner": owner, "name": name, "head": query.head_sha}
    if query.pull_number is not None:
        fields.append(_pull_selection())
        params += ", $number: Int!"
        variables["number"] = query.pull_number
    body = "\n    ".join(fields)
    text = f"query({params}) {{\n  repository(owner: $owner, name: $name) {{\n    {body}\n  }}\n}}"
    return text, variables


def build_commits_query(
    owner: str, name: str, number: int, before: str
) -> tuple[str, dict[str, Any]]:
    """The page of commits older than `before` (a pull request with more than a page)."""
    text = (
        "query($owner: String!, $name: String!, $number: Int!, $before: String) {\n"
        "  repository(owner: $owner, name: $name) { pullRequest(number: $number) {\n"
        f"    commits(last: {COMMITS_PAGE}, before: $before) {{ {_COMMIT_FIELDS} }}\n"
        "  } }\n}"
    )
    return text, {"owner": owner, "name": name, "number": number, "before": before}


# -- reading the answer ------------------------------------------------------------------


def _path_of(expression: str) -> str:
    return expression.partition(":")[2] or expression


def missing_blob(
    answer: GraphQLAnswer, expressions: Sequence[str], needed: Callable[[str], bool]
) -> str | None:
    """Why a `needed` blob (aliased `f<index>` under `repository`) is not in the answer: it
    is null, and an error says GitHub could not resolve it. None when every needed blob came
    back or is simply absent (a file that does not exist, read as None)."""
    repository = answer.data.get("repository")
    found = repository if isinstance(repository, Mapping) else {}
    for index, expression in enumerate(expressions):
        alias = f"f{index}"
        if not needed(expression) or found.get(alias) is not None:
            continue
        error = answer.missing(("repository", alias))
        if error is not None:
            rev = expression.partition(":")[0]
            return f"GitHub did not return {_path_of(expression)} at {rev[:12]}: {error.message}"
    return None


def needed_missing(answer: GraphQLAnswer, query: HeadQuery) -> str | None:
    """Why the head query's answer cannot be judged (see the module docstring), or None."""
    head = f"{query.head_sha}:"
    blob = missing_blob(answer, query.expressions, lambda expression: expression.startswith(head))
    if blob is not None or query.pull_number is None:
        return blob
    return missing_commits(answer, query.pull_number)


def missing_commits(answer: GraphQLAnswer, number: int) -> str | None:
    """Why a pull request's commits are not in the answer (an error left them out), or None."""
    repository = answer.data.get("repository")
    pull = repository.get("pullRequest") if isinstance(repository, Mapping) else None
    if isinstance(pull, Mapping) and pull.get("commits") is not None:
        return None
    error = answer.missing(("repository", "pullRequest", "commits"))
    if error is None:
        return None
    return f"GitHub did not return the commits of pull request #{number}: {error.message}"


def left_out(answer: GraphQLAnswer, limit: int = 5) -> str:
    """The fields GitHub could not resolve, for one log line: `path: message; ...`."""
    parts = [
        f"{'.'.join(map(str, error.path)) or 'the answer'}: {error.message}"
        for error in answer.errors[:limit]
    ]
    more = len(answer.errors) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def remote_file(blob: Mapping[str, Any] | None) -> RemoteFile | None:
    """A blob's text; None for a missing or binary file."""
    if not blob or blob.get("isBinary") or blob.get("text") is None:
        return None
    return RemoteFile(str(blob["text"]), str(blob.get("oid", "")), bool(blob.get("isTruncated")))


def parse_head_answer(data: Mapping[str, Any] | None, query: HeadQuery) -> HeadFacts:
    repository = (data or {}).get("repository") or {}
    blobs = {
        expression: remote_file(repository.get(f"f{index}"))
        for index, expression in enumerate(query.expressions)
    }
    rollup = ((repository.get("head") or {}).get("statusCheckRollup") or {}).get("contexts")
    ci = tuple(c for c in map(_ci_check, _nodes(rollup)) if c is not None)
    pull = repository.get("pullRequest")
    if query.pull_number is None or not isinstance(pull, Mapping):
        return HeadFacts(blobs=blobs, ci=ci)
    commits, older = parse_commits(pull.get("commits"))
    return HeadFacts(
        blobs=blobs,
        ci=ci,
        commits=commits,
        older_commits=older,
        remarks=_remarks(pull),
        linked=tuple(_linked(node) for node in _nodes(pull.get("closingIssuesReferences"))),
    )


def parse_commits(connection: Any) -> tuple[tuple[CommitInfo, ...], str | None]:
    """Commits of one page, oldest first, and the cursor of the page before, if any."""
    commits = tuple(_commit(node.get("commit") or {}) for node in _nodes(connection))
    info = connection.get("pageInfo") if isinstance(connection, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    older = info.get("startCursor") if info.get("hasPreviousPage") else None
    return commits, str(older) if older else None


def _nodes(connection: Any) -> list[Mapping[str, Any]]:
    if not isinstance(connection, Mapping):
        return []
    return [n for n in connection.get("nodes") or () if isinstance(n, Mapping)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _ci_check(node: Mapping[str, Any]) -> CiCheck | None:
    required = node.get("isRequired")
    required = required if isinstance(required, bool) else None
    if node.get("__typename") == "CheckRun":
        conclusion = _text(node.get("conclusion"))
        completed = node.get("status") == "COMPLETED" and conclusion
        app = (node.get("checkSuite") or {}).get("app") or {}
        excerpt = "\n\n".join(
            t for t in (_text(node.get("title")), _text(node.get("summary"))) if t
        )
        app_id = app.get("databaseId")
        return CiCheck(
            name=_text(node.get("name")),
            kind="check",
            state=conclusion.lower() if completed else "pending",
            required=required,
            excerpt=excerpt[:EXCERPT_LIMIT],
            app_slug=_text(app.get("slug")) or None,
            app_id=app_id if isinstance(app_id, int) else None,
        )
    if node.get("__typename") == "StatusContext":
        return CiCheck(
            name=_text(node.get("context")),
            kind="status",
            state=_text(node.get("state")).lower() or "pending",
            required=required,
            excerpt=_text(node.get("description"))[:EXCERPT_LIMIT],
        )
    return None


def _login(actor: Any) -> tuple[str, bool]:
    if not isinstance(actor, Mapping):
        return "ghost", False
    return _text(actor.get("login")) or "ghost", actor.get("__typename") == "Bot"


def _remarks(pull: Mapping[str, Any]) -> tuple[Remark, ...]:
    found: list[Remark] = []
    for review in _nodes(pull.get("reviews")):
        author, bot = _login(review.get("author"))
        can_push = review.get("authorCanPushToRepository") is True
        if _text(review.get("body")).strip():
            found.append(Remark(author, "review", _text(review.get("body")), can_push, is_bot=bot))
        for comment in _nodes(review.get("comments")):
            found.append(
                Remark(
                    author,
                    "review comment",
                    _text(comment.get("body")),
                    can_push,
                    is_bot=bot,
                    path=_text(comment.get("path")) or None,
                )
            )
    for comment in _nodes(pull.get("comments")):
        author, bot = _login(comment.get("author"))
        association = _text(comment.get("authorAssociation")) or "NONE"
        found.append(
            Remark(
                author, "comment", _text(comment.get("body")), association=association, is_bot=bot
            )
        )
    return tuple(found)


def _commit(commit: Mapping[str, Any]) -> CommitInfo:
    author = commit.get("author") or {}
    committer = commit.get("committer") or {}
    return CommitInfo(
        sha=_text(commit.get("oid")),
        message=_text(commit.get("message")),
        author_name=_text(author.get("name")),
        author_login=_text((author.get("user") or {}).get("login")) or None,
        committer_name=_text(committer.get("name")),
        committer_login=_text((committer.get("user") or {}).get("login")) or None,
    )


def _linked(node: Mapping[str, Any]) -> LinkedIssue:
    repository = node.get("repository") or {}
    number = node.get("number")
    return LinkedIssue(
        number=number if isinstance(number, int) else 0,
        title=_text(node.get("title")),
        body=_text(node.get("body")),
        repository=_text(repository.get("nameWithOwner")),
    )
