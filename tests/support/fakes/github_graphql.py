"""GitHub's real GraphQL schema with resolvers for the part the bot uses: reading blobs by
`repository(owner:, name:) { object(expression: "REV:path") { ... on Blob { ... } } }`.

Every query is validated against the full published schema; only the fields below resolve to data.
"""

from __future__ import annotations

import functools
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

from tests.support.fakes.github_model import Repo, is_binary

SCHEMA_PATH = Path(__file__).parents[2] / "fixtures" / "github" / "graphql" / "schema.graphql"


@dataclass(frozen=True)
class GraphQLContext:
    """What resolvers may see: repositories the calling installation can reach."""

    find_repo: Callable[[str, str], Repo | None]
    installation_id: int


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
            return {"__typename": "Commit", "oid": oid}
        if oid in repo.trees:
            return {"__typename": "Tree", "oid": oid}
        return None
    expression = str(args.get("expression") or "")
    rev, sep, path = expression.partition(":")
    sha = repo.resolve(rev)
    if sha is None:
        return None
    if not sep:
        return {"__typename": "Commit", "oid": sha}
    if path in ("", "/"):
        return {"__typename": "Tree", "oid": repo.commits[sha].tree}
    entry = repo.entry_at(sha, path)
    if entry is None:
        return None
    if entry.kind == "tree":
        return {"__typename": "Tree", "oid": entry.sha}
    return _blob(entry.sha, repo.blobs[entry.sha])


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
    repository.fields["object"].resolve = _resolve_object
    git_object.resolve_type = _type_of
    return schema
