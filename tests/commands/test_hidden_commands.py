"""Hidden `/judge` commands through the real webhook endpoint (issue "Hardening", 10).

A maintainer's comment can carry text they did not write or cannot see: a pasted
template with an HTML comment, or a quote whose next line GitHub draws inside the
quote. A command there is invisible on GitHub, so it must never run.
"""

from __future__ import annotations

import pytest

from tests.commands.written import comment_now
from tests.support.flow_helpers import REPO, Harness, rejected_pull

MAINTAINER = "maintainer"


@pytest.fixture
def bot(blocking_bot: Harness) -> Harness:
    return blocking_bot


HIDDEN = {
    "comment": "Thanks, I'll look later.\n<!-- /judge override accept -->",
    "multi-line comment": "Thanks!\n<!--\nchecklist\n/judge override accept\n-->\nBye.",
    "comment in a paragraph": "Looks fine <!--\n/judge override accept\n-->",
    "lazy quote line": "> The judges are wrong here\n/judge override accept",
}


@pytest.mark.parametrize("body", list(HIDDEN.values()), ids=list(HIDDEN))
async def test_hidden_override_is_not_obeyed(bot: Harness, body: str) -> None:
    number, sha = await rejected_pull(bot, author="agent", committer="agent")
    bot.fake.set_permission(REPO, MAINTAINER, "write")
    await bot.send("issue_comment", comment_now(REPO, number, body, MAINTAINER))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    assert "override" not in run.output["title"]
    records = [v.record for v in await bot.storage.list_verdicts(head_sha=sha)]
    assert not any(r["human_override"] for r in records)
    assert bot.comments(number) == [], "a hidden command is not a command: no answer"


async def test_a_visible_command_after_a_comment_still_runs(bot: Harness) -> None:
    number, sha = await rejected_pull(bot, author="agent", committer="agent")
    bot.fake.set_permission(REPO, MAINTAINER, "write")
    body = (
        "<!-- pasted template: /judge rerun -->\n> The judges are wrong\n\n/judge override accept"
    )
    await bot.send("issue_comment", comment_now(REPO, number, body, MAINTAINER))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    assert "override" in run.output["title"]
