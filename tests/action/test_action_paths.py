"""The action's smaller paths: the seam's refusal of the App's JWT, forks, the earlier
run's start, events with nothing to judge, imports of repeated records."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.action.comments import started
from bot.action.forks import is_fork_pull
from bot.action.github import NoAppIdentity, WorkflowGitHub
from bot.action.records_import import import_records, read_records
from bot.action.settings import ActionSettings
from bot.storage import storage_from_url
from tests.action.support import HOSTED, MAINTAINER, Runner, workflow_event
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)
from tests.support.merge_helpers import merge_group_event, queue_group
from tests.support.verdict_builders import make_record


async def test_a_workflow_has_no_app_key_to_sign_with() -> None:
    async with aiohttp.ClientSession() as session:
        github = WorkflowGitHub(app_id="15368", private_key="", session=session, token="t")
        with pytest.raises(NoAppIdentity):
            await github.app_client().getitem("/app")


@pytest.mark.parametrize(
    ("head", "base", "fork"),
    [
        ("octo/hello", "octo/hello", False),
        ("Octo/Hello", "octo/hello", False),
        ("them/hello", "octo/hello", True),
        (None, "octo/hello", True),  # the fork was deleted
    ],
)
def test_which_pull_requests_come_from_forks(head: str | None, base: str, fork: bool) -> None:
    payload: dict[str, Any] = {
        "pull_request": {
            "head": {"repo": None if head is None else {"full_name": head}},
            "base": {"repo": {"full_name": base}},
        }
    }
    assert is_fork_pull(payload) is fork


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-28T10:00:00Z", datetime(2026, 11, 28, 10, tzinfo=UTC)),
        ("2026-11-28T10:00:00", None),
        ("yesterday", None),
        (None, None),
    ],
)
def test_when_the_earlier_run_started(raw: str | None, expected: datetime | None) -> None:
    assert started({"started_at": raw}) == expected


def test_the_state_directory() -> None:
    assert ActionSettings().directory("/r/tmp") == Path("/r/tmp/judge-bot")
    assert ActionSettings().directory(None) == Path(".judge-bot")
    assert ActionSettings(action_dir=Path("/x")).directory("/r/tmp") == Path("/x")


async def test_a_merge_group_that_needs_no_check(local_runner: Runner) -> None:
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    head = queue_group(local_runner.fake, number)
    event = merge_group_event(local_runner.fake, "destroyed", number, head, reason="merged")
    step = await local_runner.step("merge_group", workflow_event(event))
    assert (step.status, step.outputs["verdict"]) == (0, "none")
    assert local_runner.fake.repo(REPO).check_runs == {}


async def test_an_override_on_an_issue_that_is_no_pull_request(local_runner: Runner) -> None:
    comment = comment_payload(REPO, 7, "/judge override accept", MAINTAINER, on_pull=False)
    step = await local_runner.step("issue_comment", workflow_event(comment))
    assert (step.status, step.outputs["verdict"]) == (0, "none")
    assert local_runner.llm.requests == []


async def test_an_override_of_a_head_no_workflow_judged_yet(local_runner: Runner) -> None:
    """Judged first (there is no run to adopt), then decided by the maintainer."""
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    comment = comment_payload(REPO, number, f"/judge override reject {sha[:7]}", MAINTAINER)
    step = await local_runner.step("issue_comment", workflow_event(comment))
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert (run.head_sha, run.conclusion) == (sha, "neutral")
    assert (step.outputs["verdict"], step.outputs["go-no-go"]) == ("reject", "NO-GO")


async def test_the_runner_files_may_be_absent(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    event = workflow_event(pull_request_payload(local_runner.fake, "opened", number))
    step = await local_runner.step("pull_request", event, GITHUB_OUTPUT="", GITHUB_STEP_SUMMARY="")
    assert step.status == 0
    assert capsys.readouterr().out.startswith("judge: accept (success) ")


async def test_repeated_records_are_added_once(tmp_path: Path) -> None:
    first = make_record()
    second = make_record().model_copy(update={"head_sha": "b" * 40})
    path = tmp_path / "verdicts.jsonl"
    path.write_text(f"{first.to_jsonl()}\n\n{second.to_jsonl()}\n{first.to_jsonl()}\n")
    records = read_records([path])
    assert len(records) == 3
    storage = storage_from_url(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    await storage.open()
    try:
        imported = await import_records(storage, records)
        assert (imported.added, imported.already_there) == (2, 1)
        assert len(await storage.list_verdicts()) == 2
    finally:
        await storage.close()


async def test_a_push_and_a_merge_group_in_this_process(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    before = local_runner.fake.repo(REPO).branches["main"]
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC}, branch="main")
    push = push_payload(
        REPO,
        before=before,
        after=sha,
        ref="refs/heads/main",
        commits=[{"id": sha, "added": ["docs/notes.md"], "author": "agent"}],
    )
    assert (await local_runner.step("push", workflow_event(push))).outputs["verdict"] == "accept"
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    number = open_pull(
        local_runner.fake, commit_files(local_runner.fake, {"docs/other.md": GOOD_DOC})
    )
    head = queue_group(local_runner.fake, number)
    group = merge_group_event(local_runner.fake, "checks_requested", number, head)
    step = await local_runner.step("merge_group", workflow_event(group))
    assert (step.status, step.outputs["conclusion"]) == (0, "success")


async def test_a_refused_commenter_costs_no_judgment(local_runner: Runner) -> None:
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    comment = comment_payload(REPO, number, "/judge rerun", "agent")
    step = await local_runner.step("issue_comment", workflow_event(comment))
    assert (step.status, step.outputs["verdict"]) == (0, "none")
    assert local_runner.llm.requests == []
    assert local_runner.fake.repo(REPO).check_runs == {}


async def test_a_fork_without_keys_in_this_process(local_runner: Runner) -> None:
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    payload = pull_request_payload(local_runner.fake, "synchronize", number)
    event = workflow_event(payload, fork="them/hello")
    step = await local_runner.step(
        "pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED
    )
    assert (step.status, step.outputs["conclusion"]) == (0, "neutral")
    assert step.outputs["check-run-url"]


async def test_a_run_that_cannot_keep_its_state_says_so_in_one_line(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = local_runner.home / "not-a-directory"
    blocked.write_text("")
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    event = workflow_event(
        pull_request_payload(local_runner.fake, "opened", open_pull(local_runner.fake, sha))
    )
    step = await local_runner.step("pull_request", event, JUDGE_ACTION_DIR=str(blocked))
    assert step.status == 3
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("judge-bot action: the run failed: FileExistsError")
    assert local_runner.token not in line
