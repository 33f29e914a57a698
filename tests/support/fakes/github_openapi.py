"""GitHub's REST description (the subset the bot uses) loaded for openapi-core, once per process.

Changes made in memory, each for a defect in GitHub's published data (see PROVENANCE.md):

* `POST /repos/{owner}/{repo}/check-runs` puts a `discriminator` on inline `oneOf` branches, which
  openapi-core cannot resolve; it is deleted. `status: completed` without `conclusion` is still
  rejected by the remaining `oneOf`.
* Four schemas are `nullable: true` with an `enum` that lacks `null` (the check run `conclusion`
  among them, so every in-progress check run would fail). OpenAPI 3.0.3 says `nullable` only
  admits null when the enum lists it; GitHub's intent is plainly "one of these, or null", so
  `None` is added to those enums. Nothing else is loosened: a wrong non-null value still fails.
* `servers` gains the loopback address the fake listens on (with and without the GHES `/api/v3`
  prefix). The request adapter reports the host without its port, so one loaded description
  serves every fake regardless of the port it got.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openapi_core import Config, OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_schema_validator import OAS30Validator

SPEC_PATH = Path(__file__).parents[2] / "fixtures" / "github" / "rest-api-subset.json"
FAKE_HOST_URL = "http://127.0.0.1"
GHES_PREFIX = "/api/v3"


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    documented_statuses: frozenset[int]


def _nullable_enums(node: Any) -> int:
    count = 0
    if isinstance(node, dict):
        if node.get("nullable") is True and "enum" in node and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
            count += 1
        for value in node.values():
            count += _nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            count += _nullable_enums(value)
    return count


@functools.cache
def spec_dict() -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(SPEC_PATH.read_text())
    check_runs = spec["paths"]["/repos/{owner}/{repo}/check-runs"]["post"]
    del check_runs["requestBody"]["content"]["application/json"]["schema"]["discriminator"]
    _nullable_enums(spec)
    spec["servers"] += [{"url": FAKE_HOST_URL}, {"url": FAKE_HOST_URL + GHES_PREFIX}]
    return spec


# GitHub's text media types (a bare sha, a diff, a patch) are plain UTF-8 strings.
TEXT_MEDIA_TYPES = (
    "application/vnd.github.sha",
    "application/vnd.github.diff",
    "application/vnd.github.patch",
)


def _text(data: bytes) -> str:
    return data.decode("utf-8")


@functools.cache
def openapi() -> OpenAPI:
    config = Config(extra_media_type_deserializers=dict.fromkeys(TEXT_MEDIA_TYPES, _text))
    return OpenAPI.from_dict(spec_dict(), config=config)


@functools.cache
def operations() -> tuple[Operation, ...]:
    found: list[Operation] = []
    for template, item in spec_dict()["paths"].items():
        # Path parameters never span a `/`: GitHub's own `{path}` must arrive percent-encoded.
        regex = re.sub(r"\\\{[a-z_]+\\\}", "([^/]+)", re.escape(template))
        for method, op in item.items():
            if method == "parameters":
                continue
            statuses = frozenset(int(code) for code in op["responses"] if code.isdigit())
            found.append(
                Operation(
                    method.upper(),
                    template,
                    op["operationId"],
                    re.compile(regex + "$"),
                    statuses,
                )
            )
    return tuple(found)


def operation_ids() -> frozenset[str]:
    return frozenset(op.operation_id for op in operations())


def find_operation(method: str, path: str) -> tuple[Operation, list[str]] | None:
    """The described operation for a path (without any GHES prefix), and its raw path values."""
    for op in operations():
        if op.method != method:
            continue
        match = op.pattern.match(path)
        if match is not None:
            return op, list(match.groups())
    return None


@functools.cache
def _basic_error_validator() -> OAS30Validator:
    return OAS30Validator(spec_dict()["components"]["schemas"]["basic-error"])


def basic_error_problems(body: Any) -> list[str]:
    """Problems with an error body GitHub sends for statuses the description leaves out."""
    return [error.message for error in _basic_error_validator().iter_errors(body)]


def example(name: str) -> Any:
    """A deep copy of one of GitHub's `components.examples` values."""
    return json.loads(json.dumps(spec_dict()["components"]["examples"][name]["value"]))


@dataclass
class OARequest:
    """What openapi-core needs of a request, built from the raw (still percent-encoded) path."""

    method: str
    path: str
    parameters: RequestParameters
    body: bytes | None
    content_type: str
    host_url: str = FAKE_HOST_URL


@dataclass(frozen=True)
class OAResponse:
    status_code: int
    data: bytes
    headers: dict[str, str]
    content_type: str
