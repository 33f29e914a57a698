"""Small types shared by the fake GitHub's pipeline and its handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from multidict import MultiDictProxy

from tests.support.fakes import github_openapi as oa

DOCS = "https://docs.github.com/rest"


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHubError(Exception):
    """An answer other than success, raised by a handler and turned into a GitHub error body."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass
class Incoming:
    """A request after routing: operation, decoded path values, query, JSON body, caller."""

    request: web.Request
    operation: oa.Operation
    params: dict[str, str]
    query: MultiDictProxy[str]
    json: Any
    installation_id: int | None = None

    @property
    def accept(self) -> str:
        return self.request.headers.get("accept", "")


Handler = Callable[[Incoming], Awaitable[Reply]]
