"""In blocking mode an author cannot skip their own required check (end to end).

`neutral` passes a required check, so a skip is a decision about the change: the skip
label counts only when someone who could override the judges added it, and the
`[skip judge]` commit marker only from the authors `skip_marker_authors` lists.
Advisory mode honours both, as before (nothing blocks there anyway).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.webhook_helpers import example

pytestmark = pytest.mark.usefixtures("fake_github")


@pytest.fixture
def bot(advisory_bot: Harness) -> Harness:
    return advisory_bot


def configure(bot: Harness, text: str) -> None:
    bot.fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure", branch="main")


async def add_skip_label(bot: Harness, number: int, sender: str, action: str = "labeled") -> None:
    bot.fake.add_label(REPO, "judge-skip")
    labels = bot.fake.repo(REPO).issues[number].labels
    if action == "labeled" and "judge-skip" not in labels:
        labels.append("judge-skip")
    if action == "unlabeled" and "judge-skip" in labels:
        labels.remove("judge-skip")
    # Built as `opened`, then turned into the label event (the builder validates as it goes).
    payload: dict[str, Any] = pull_request_payload(bot.fake, "opened", number)
    payload["action"] = action
    labeled = json.loads(example("pull_request", "labeled"))
    payload["label"] = {**labeled["label"], "name": "judge-skip"}
    payload["sender"]["login"] = sender
    await bot.send("pull_request", payload)


async def open_pull_request(
    bot: Harness, message: str = "Add notes", **pull: Any
) -> tuple[int, str]:
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, message=message)
    number = open_pull(bot.fake, sha, **pull)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number, sha


async def test_the_author_adding_the_skip_label_is_judged_anyway(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    number, sha = await open_pull_request(bot)
    bot.fake.set_permission(REPO, "agent", "write")
    await add_skip_label(bot, number, sender="agent")
    [run] = bot.check_runs(sha=sha)
    assert "skipped" not in run.output["title"]
    # Judged again, not skipped; answered from the verdict cache, so the author cannot
    # re-roll the judges by labelling.
    assert len(bot.llm.requests) == 1
    assert run.conclusion == "success"
    assert "label was not honoured" in run.output["summary"]
    assert "pull request author cannot judge their own change" in run.output["summary"]


async def test_a_reader_adding_the_skip_label_is_judged_anyway(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    number, sha = await open_pull_request(bot)
    bot.fake.set_permission(REPO, "visitor", "read")
    await add_skip_label(bot, number, sender="visitor")
    [run] = bot.check_runs(sha=sha)
    assert "skipped" not in run.output["title"]
    assert "needs write, maintain or admin access" in run.output["summary"]


async def test_a_maintainer_adding_the_skip_label_skips(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    number, sha = await open_pull_request(bot)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await add_skip_label(bot, number, sender="lead")
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "skipped" in run.output["title"] and "@lead" in run.output["title"]
    assert len(bot.llm.requests) == 1, "only the first judgment called a model"


async def test_a_label_nobody_is_known_to_have_added_does_not_skip(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    _, sha = await open_pull_request(bot, labels=("judge-skip",))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    assert "nobody is known to have added it" in run.output["summary"]


async def test_removing_the_label_forgets_who_added_it(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT), scores(*ACCEPT))
    number, sha = await open_pull_request(bot)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await add_skip_label(bot, number, sender="lead")
    await add_skip_label(bot, number, sender="lead", action="unlabeled")
    # The author puts the label back: the maintainer's earlier grant no longer counts.
    bot.fake.set_permission(REPO, "agent", "write")
    await add_skip_label(bot, number, sender="agent")
    [run] = bot.check_runs(sha=sha)
    assert "skipped" not in run.output["title"]


async def test_the_skip_marker_needs_a_listed_author_in_blocking_mode(bot: Harness) -> None:
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    _, sha = await open_pull_request(bot, message="WIP [skip judge]")
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success", "judged, not skipped"
    assert "commit marker was not honoured" in run.output["summary"]


async def test_a_listed_author_may_skip_with_the_marker(bot: Harness) -> None:
    configure(bot, "mode: blocking\nskip_marker_authors: ['@agent']\n")
    _, sha = await open_pull_request(bot, message="WIP [skip judge]")
    [run] = bot.check_runs(sha=sha)
    assert "skip judge" in run.output["title"]
    assert bot.llm.requests == []


async def test_advisory_mode_honours_both_as_before(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    number, sha = await open_pull_request(bot, message="WIP [skip judge]")
    assert bot.llm.requests == []
    bot.fake.set_permission(REPO, "agent", "write")
    await add_skip_label(bot, number, sender="agent")
    [run] = bot.check_runs(sha=sha)
    assert "skipped" in run.output["title"]
