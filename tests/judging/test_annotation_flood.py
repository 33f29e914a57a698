"""A file full of broken anchors through the real webhook endpoint (issue "Hardening", 11).

Before the cap, a 100,000-line file produced 3,184 annotations and 64 check-run updates,
each paced as a write on the installation. The run now carries at most 50 annotations,
the most relevant first, and its summary says how many were left out.
"""

from __future__ import annotations

import pytest

from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)

ANCHORS = 400


@pytest.fixture
def bot(advisory_bot: Harness) -> Harness:
    return advisory_bot


async def test_broken_anchor_flood_costs_one_update_and_is_counted(
    bot: Harness, fake_github: FakeGitHub
) -> None:
    lines = ["# Notes", ""] + [f"See [part {n}](#missing-{n})." for n in range(ANCHORS)]
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": "\n".join(lines) + "\n"})
    number = open_pull(bot.fake, sha)
    updates_before = fake_github.count("checks/update")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    annotations = run.output.get("annotations") or []
    assert len(annotations) == 50
    assert [a["start_line"] for a in annotations] == list(range(3, 53)), "by line"
    assert all(a["title"].startswith("mechanical finding: broken-anchor") for a in annotations)
    assert f"Annotations: 50 of {ANCHORS} shown" in run.output["summary"]
    assert f"{ANCHORS - 50} left out" in run.output["summary"]
    # Creating the run and completing it; no request per further 50 annotations.
    assert fake_github.count("checks/update") - updates_before <= 1
