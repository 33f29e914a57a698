"""Checks shared by the check-run rendering tests: request bodies valid against GitHub's
API description, and every string an output would send."""

from __future__ import annotations

from typing import Any

import jsonschema

from bot.judging.check_run import CheckRunOutput
from tests.support.fakes.github_openapi import spec_dict


def _body_schema(path: str, method: str) -> dict[str, Any]:
    operation = spec_dict()["paths"][path][method]
    schema: dict[str, Any] = operation["requestBody"]["content"]["application/json"]["schema"]
    return schema


def assert_valid_payloads(output: CheckRunOutput) -> None:
    """Every request body validates: the first as a create (plus the required name and
    head_sha the handler adds), the rest as updates."""
    payloads = output.payloads()
    create = _body_schema("/repos/{owner}/{repo}/check-runs", "post")
    update = _body_schema("/repos/{owner}/{repo}/check-runs/{check_run_id}", "patch")
    jsonschema.validate({"name": "judge", "head_sha": "a" * 40, **payloads[0]}, create)
    jsonschema.validate(payloads[0], update)
    for payload in payloads[1:]:
        jsonschema.validate(payload, update)


def all_strings(out: CheckRunOutput) -> str:
    parts = [out.title, out.summary, out.text]
    parts += [str(v) for a in out.annotations for v in a.values()]
    parts += [v for a in out.actions for v in a.values()]
    return "\n".join(parts)
