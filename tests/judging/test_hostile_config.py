"""A hostile `.github/judge.yml` through the real webhook endpoint: the alias bomb, a
recursive alias and 5,000 nested `[` each end in a completed neutral `judge` check run
naming the problem, on every pull request, while the server keeps answering `/healthz`.

The bound on time is generous on purpose (machines are noisy): the assertions are
about outcomes, the bound only turns a regression into a failure instead of a hang.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import (
    GOOD_DOC,
    REPO,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
)
from tests.support.webhook_helpers import webhook_headers

pytestmark = pytest.mark.usefixtures("fake_github")


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol"]']
    for n in range(1, 10):
        lines.append(f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


HOSTILE = [
    # (name, text, where, fragment of the summary)
    ("alias bomb", alias_bomb(), "line 5", "more than 10,000 values"),
    (
        "recursive alias",
        "paths: &a {include: *a}\n",
        "line 1",
        "is used inside the value it names",
    ),
    ("5000 [", "[" * 5000, "line 1", "nested more than 32 levels deep"),
]


def set_config(fake: FakeGitHub, text: str) -> None:
    fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure judge", branch="main")


async def post(bot: Harness, event: str, data: dict[str, Any]) -> str:
    """Deliver a signed webhook without waiting for it to be processed."""
    body = json.dumps(data).encode()
    delivery_id = str(uuid.uuid4())
    response = await bot.client.post(
        bot.webhook_path, data=body, headers=webhook_headers(event, body, delivery_id=delivery_id)
    )
    assert response.status == 202, await response.text()
    return delivery_id


async def settle_while_probing(bot: Harness, delivery_id: str) -> int:
    """Wait for the delivery, asking `/healthz` all the while; how many answers came."""
    settled = asyncio.create_task(bot.settled(delivery_id))
    answers = 0
    while True:
        response = await bot.client.get("/healthz")
        assert response.status == 200
        answers += 1
        if settled.done():
            break
        await asyncio.sleep(0.01)
    await settled
    return answers


@pytest.mark.parametrize(
    ("text", "where", "fragment"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
async def test_hostile_config_ends_in_a_neutral_check_naming_the_problem(
    advisory_bot: Harness, text: str, where: str, fragment: str
) -> None:
    bot = advisory_bot
    set_config(bot.fake, text)
    async with asyncio.timeout(30):
        for branch in ("feature", "other"):
            sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, branch=branch)
            number = open_pull(bot.fake, sha, branch=branch)
            delivery = await post(
                bot, "pull_request", pull_request_payload(bot.fake, "opened", number)
            )
            assert await settle_while_probing(bot, delivery) >= 1
            [run] = bot.check_runs(sha=sha)
            assert (run.name, run.status, run.conclusion) == ("judge", "completed", "neutral")
            assert run.output["title"].startswith(f"configuration error · {where}")
            summary = run.output["summary"]
            assert f".github/judge.yml` {where}" in summary, summary
            assert fragment in summary, summary
    assert bot.llm.requests == []
