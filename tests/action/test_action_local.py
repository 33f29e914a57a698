"""`judge-bot action` in a thread of the test's process (so coverage measures it): the
paths around the judging the subprocess tests show, its inputs and its failures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.action.support import HOSTED, MAINTAINER, Runner, workflow_event
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    QUICK,
    REJECT,
    REPO,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)


def blocking(runner: Runner) -> None:
    runner.fake.add_commit(
        REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
    )


def opened_event(runner: Runner, doc: str = GOOD_DOC, **fork: str) -> dict[str, object]:
    sha = commit_files(runner.fake, {"docs/notes.md": doc})
    number = open_pull(runner.fake, sha)
    return workflow_event(pull_request_payload(runner.fake, "opened", number), **fork)


async def test_an_accept_in_this_process(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    step = await local_runner.step("pull_request", opened_event(local_runner))
    assert step.status == 0
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("accept", "success")
    assert step.cache_kept
    # One file is all the Actions cache keeps: nothing is left in a write-ahead log.
    directory = Path(step.outputs["cache-path"]).parent
    assert sorted(p.name for p in directory.iterdir()) == [
        "verdict-cache.sqlite3",
        "verdicts.jsonl",
    ]


async def test_the_same_content_again_costs_no_model_call(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    await local_runner.step("pull_request", opened_event(local_runner))
    asked = len(local_runner.llm.requests)
    # A later run restores the cache (RUNNER_TEMP here): the verdict cache answers.
    step = await local_runner.step("pull_request", opened_event(local_runner))
    assert step.outputs["verdict"] == "accept"
    assert len(local_runner.llm.requests) == asked


async def test_a_blocking_config_on_the_head_does_not_count(local_runner: Runner) -> None:
    """The repository config is read from the default branch through the API: a pull
    request that rewrites `.github/judge.yml` does not choose its own mode."""
    blocking(local_runner)
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(
        local_runner.fake,
        {"docs/notes.md": "# Notes\n\nthin\n", ".github/judge.yml": "mode: advisory\n"},
    )
    number = open_pull(local_runner.fake, sha)
    event = workflow_event(pull_request_payload(local_runner.fake, "opened", number))
    step = await local_runner.step("pull_request", event)
    assert (step.status, step.outputs["conclusion"]) == (1, "failure")


async def test_a_read_only_fork_token_leaves_the_conclusion_to_the_job(
    local_runner: Runner,
) -> None:
    blocking(local_runner)
    local_runner.fake.inject(
        "checks/create",
        status=403,
        body={
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com",
        },
    )
    event = opened_event(local_runner, fork="them/hello")
    step = await local_runner.step(
        "pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED
    )
    assert step.status == 1
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("skipped", "action_required")
    assert "GitHub refused the `judge` check run" in step.summary
    assert local_runner.fake.repo(REPO).check_runs == {}


async def test_a_check_run_refused_for_another_reason_is_githubs_failure(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    local_runner.fake.inject(
        "checks/create",
        status=422,
        body={"message": "Invalid", "documentation_url": "https://docs.github.com"},
    )
    event = opened_event(local_runner, fork="them/hello")
    step = await local_runner.step(
        "pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED
    )
    assert step.status == 3
    assert "GitHub failed" in capsys.readouterr().err


async def test_a_fork_with_the_keys_is_judged(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    step = await local_runner.step("pull_request", opened_event(local_runner, fork="them/hello"))
    assert step.outputs["verdict"] == "accept"


async def test_an_override_with_the_state_at_hand_and_merge_on_accept(
    local_runner: Runner,
) -> None:
    blocking(local_runner)
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    event = opened_event(local_runner, "# Notes\n\nthin\n")
    first = await local_runner.step("pull_request", event)
    assert first.status == 1
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    asked = len(local_runner.llm.requests)
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    number = int(event["number"])  # type: ignore[call-overload]
    comment = comment_payload(REPO, number, "/judge override accept", MAINTAINER)
    step = await local_runner.step(
        "issue_comment", workflow_event(comment), JUDGE_ACTION_MERGE="auto-merge"
    )
    assert (step.status, step.outputs["conclusion"]) == (0, "success")
    # The restored file's state and verdicts are not trusted in blocking mode (with merge
    # on accept in no mode): the head was judged again before it was overridden.
    assert len(local_runner.llm.requests) == asked + 2
    [merge] = local_runner.fake.merge_queue.auto_merge
    pull = local_runner.fake.repo(REPO).pulls[number]
    assert (merge.number, merge.head_sha, merge.method) == (number, pull.head_sha, "squash")


async def test_the_repositorys_merge_setting_does_not_start_the_apps_queue_in_a_workflow(
    local_runner: Runner,
) -> None:
    """No worker runs in a workflow: an override accept goes where the judges' accept goes
    (the Action's own merge setting, off here), never into the App's queue."""
    local_runner.fake.add_commit(
        REPO,
        {".github/judge.yml": "mode: blocking\nmerge:\n  enabled: true\n"},
        message="Configure",
        branch="main",
    )
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    event = opened_event(local_runner, "# Notes\n\nthin\n")
    first = await local_runner.step("pull_request", event)
    assert first.status == 1
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    number = int(event["number"])  # type: ignore[call-overload]
    comment = comment_payload(REPO, number, "/judge override accept", MAINTAINER)
    step = await local_runner.step("issue_comment", workflow_event(comment))
    assert (step.status, step.outputs["conclusion"]) == (0, "success")
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert "Merge queue" not in run.output["summary"]
    assert local_runner.fake.count("pulls/merge") == 0
    assert local_runner.fake.count("repos/get-branch-rules") == 0


async def test_an_override_reject_fails_the_check_in_blocking_mode(local_runner: Runner) -> None:
    """The comment's run reads the mode from the base branch as the judging run did: a
    person's reject is a failure there, never a neutral that passes."""
    blocking(local_runner)
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    assert (await local_runner.step("pull_request", event)).status == 0
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    number = int(event["number"])  # type: ignore[call-overload]
    comment = comment_payload(REPO, number, "/judge override reject", MAINTAINER)
    step = await local_runner.step("issue_comment", workflow_event(comment))
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert (run.conclusion, step.outputs["conclusion"]) == ("failure", "failure")


async def test_an_accept_enables_auto_merge_at_the_judged_sha(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    step = await local_runner.step(
        "pull_request", event, JUDGE_ACTION_MERGE="auto-merge", JUDGE_ACTION_MERGE_METHOD="rebase"
    )
    assert step.status == 0
    [merge] = local_runner.fake.merge_queue.auto_merge
    sha = event["pull_request"]["head"]["sha"]  # type: ignore[index]
    assert (merge.head_sha, merge.method) == (sha, "rebase")
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert "Auto-merge is enabled at" in run.output["summary"]


async def test_an_accept_enters_the_merge_queue_at_the_judged_sha(local_runner: Runner) -> None:
    local_runner.fake.merge_queue.enable(REPO, "main")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    await local_runner.step("pull_request", event, JUDGE_ACTION_MERGE="merge-queue")
    assert local_runner.fake.merge_queue.entries(REPO, "main") == [event["number"]]
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert "In the merge queue at position 1" in run.output["summary"]


async def test_a_merge_github_refuses_is_said_on_the_run(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    await local_runner.step(
        "pull_request", opened_event(local_runner), JUDGE_ACTION_MERGE="merge-queue"
    )
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert "GitHub did not take the accepted head" in run.output["summary"]
    assert "does not have a merge queue" in run.output["summary"]


async def test_a_rerun_comment_judges_the_head_again(local_runner: Runner) -> None:
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    await local_runner.step("pull_request", event)
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    asked = len(local_runner.llm.requests)
    comment = comment_payload(REPO, int(event["number"]), "/judge rerun", MAINTAINER)  # type: ignore[call-overload]
    step = await local_runner.step(
        "issue_comment",
        workflow_event(comment),
        JUDGE_ACTION_DIR=str(local_runner.home / "comment-cache"),
    )
    assert step.status == 0
    assert len(local_runner.llm.requests) == asked + 1
    # The head's run is judged again in place: no second run.
    assert len(local_runner.fake.repo(REPO).check_runs) == 1


@pytest.mark.parametrize("body", ["/judge help", "Looks good to me"])
async def test_comments_that_judge_nothing(local_runner: Runner, body: str) -> None:
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    comment = comment_payload(REPO, number, body, MAINTAINER)
    step = await local_runner.step("issue_comment", workflow_event(comment))
    assert (step.status, step.outputs["verdict"]) == (0, "none")
    assert local_runner.llm.requests == []


async def test_an_event_the_gate_does_not_handle_does_nothing(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    step = await local_runner.step("workflow_dispatch", {"repository": {"full_name": REPO}})
    assert step.status == 0
    assert "nothing to do for a workflow_dispatch event" in capsys.readouterr().err
    assert local_runner.fake.calls == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"GITHUB_TOKEN": ""}, "GITHUB_TOKEN is not set"),
        ({"GITHUB_REPOSITORY": "nobody"}, "GITHUB_REPOSITORY is not OWNER/NAME"),
        ({"JUDGE_MODE": "strict"}, "configuration error: JUDGE_MODE"),
        ({"JUDGE_ACTION_MERGE": "now"}, "configuration error: JUDGE_ACTION_MERGE"),
        ({"GITHUB_REPOSITORY": "octo/other"}, "a pull_request event of another repository"),
    ],
)
async def test_bad_input_is_one_line_and_exit_2(
    local_runner: Runner, capsys: pytest.CaptureFixture[str], extra: dict[str, str], message: str
) -> None:
    step = await local_runner.step("pull_request", opened_event(local_runner), **extra)
    assert step.status == 2
    assert message in capsys.readouterr().err
    assert local_runner.fake.calls == []


async def test_an_event_file_that_is_not_an_event(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(local_runner.home / "no-such-event.json")
    step = await local_runner.step("push", {}, GITHUB_EVENT_PATH=missing)
    assert step.status == 2
    assert "GITHUB_EVENT_PATH: cannot read it" in capsys.readouterr().err


async def test_a_token_github_refuses_is_exit_3(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    step = await local_runner.step(
        "pull_request", opened_event(local_runner), GITHUB_TOKEN="ghs_revoked"
    )
    assert step.status == 3
    text = capsys.readouterr().err
    assert "GitHub failed" in text and "ghs_revoked" not in text


@pytest.mark.parametrize("named", [{}, {"JUDGE_ENV_FILE": ".env"}])
async def test_a_env_file_in_the_work_tree_is_not_read(
    local_runner: Runner, named: dict[str, str]
) -> None:
    """A checked-out repository's `.env` must not choose the action's settings (here it
    would make a rejection fail the job; elsewhere, send the keys to its own host)."""
    (local_runner.home / ".env").write_text("JUDGE_MODE=blocking\n")
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    event = opened_event(local_runner, "# N\n\nthin\n")
    step = await local_runner.step("pull_request", event, **named)
    assert (step.status, step.outputs["conclusion"]) == (0, "neutral")


async def test_records_of_a_run_import_for_triage_and_calibrate(
    local_runner: Runner, capsys: pytest.CaptureFixture[str]
) -> None:
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    step = await local_runner.step("pull_request", opened_event(local_runner, "# N\n\nthin\n"))
    capsys.readouterr()
    database = f"sqlite:///{local_runner.home / 'downloaded.sqlite3'}"
    records = step.outputs["record-path"]
    assert await in_thread("action", "import", records, "--database-url", database) == 0
    assert await in_thread("action", "import", records, "--database-url", database) == 0
    assert capsys.readouterr().out.splitlines() == [
        "imported 1 records (0 already there)",
        "imported 0 records (1 already there)",
    ]
    assert await in_thread("triage", "--json", "--database-url", database) == 0
    triage = json.loads(capsys.readouterr().out)
    assert triage["judgments"] == 1
    [flagged] = triage["flagged"]
    assert (flagged["head_sha"], flagged["verdict"]) == (step.records[0].head_sha, "reject")
    assert await in_thread("calibrate", "--json", "--database-url", database) == 0
    calibration = json.loads(capsys.readouterr().out)
    assert calibration["overall"]["judgments"] == 1
    assert calibration["overall"]["go_no_go"]["NO-GO"] == 1


async def in_thread(*argv: str) -> int:
    """A command as a person runs it; in a thread, as it runs its own event loop."""
    return await asyncio.to_thread(main, list(argv))


def test_a_bad_records_file_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "verdicts.jsonl"
    bad.write_text('{"task_id": "x"}\n')
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    assert main(["action", "import", str(bad), "--database-url", database]) == 2
    assert f"{bad}:1: not a verdict record" in capsys.readouterr().err
    assert main(["action", "import", str(tmp_path / "none.jsonl")]) == 2
    assert "cannot read it" in capsys.readouterr().err


async def test_a_priority_comment_is_told_the_queue_is_the_apps(local_runner: Runner) -> None:
    """`/judge merge --priority` orders the App's own queue: a workflow has none, and says
    so (not "this pull request is not in the merge queue"), whatever `merge` is."""
    sha = commit_files(local_runner.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(local_runner.fake, sha)
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    comment = comment_payload(REPO, number, "/judge merge --priority urgent", MAINTAINER)
    step = await local_runner.step(
        "issue_comment", workflow_event(comment), JUDGE_ACTION_MERGE="merge-queue"
    )
    assert (step.status, step.outputs["verdict"]) == (0, "none")
    [reply] = [
        c.body for c in local_runner.fake.repo(REPO).comments.values() if c.issue_number == number
    ]
    assert reply.startswith(f"@{MAINTAINER}, `/judge merge --priority` sets a place")
    assert "judge-bot's GitHub Action has no such queue" in reply
    assert local_runner.llm.requests == []


def pushed_event(runner: Runner, number: int, doc: str) -> dict[str, object]:
    runner.fake.merges.push(REPO, number, {"docs/more.md": doc})
    return workflow_event(pull_request_payload(runner.fake, "synchronize", number))


async def auto_merged(runner: Runner) -> int:
    """An accepted pull request with GitHub's auto-merge on at its head."""
    runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(runner)
    await runner.step("pull_request", event, JUDGE_ACTION_MERGE="auto-merge")
    [merge] = runner.fake.merge_queue.auto_merge
    return merge.number


async def test_a_new_head_not_accepted_loses_auto_merge(local_runner: Runner) -> None:
    """GitHub keeps auto-merge on after a push by someone with write access: the neutral
    run of an advisory reject would let it merge a head nobody accepted."""
    number = await auto_merged(local_runner)
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    event = pushed_event(local_runner, number, "# More\n\nthin\n")
    step = await local_runner.step("pull_request", event, JUDGE_ACTION_MERGE="auto-merge")
    assert step.outputs["conclusion"] == "neutral"
    assert local_runner.fake.merge_queue.auto_merge == []
    assert local_runner.fake.merge_queue.auto_merge_disabled == [number, number]


async def test_a_new_head_is_revoked_before_it_is_judged(local_runner: Runner) -> None:
    number = await auto_merged(local_runner)
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = pushed_event(local_runner, number, GOOD_DOC)
    await local_runner.step("pull_request", event, JUDGE_ACTION_MERGE="auto-merge")
    assert local_runner.fake.merge_queue.auto_merge_disabled == [number]
    [merge] = local_runner.fake.merge_queue.auto_merge
    assert merge.head_sha == local_runner.fake.repo(REPO).pulls[number].head_sha


async def test_an_override_reject_takes_it_out_of_the_merge_queue(local_runner: Runner) -> None:
    local_runner.fake.merge_queue.enable(REPO, "main")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    event = opened_event(local_runner)
    await local_runner.step("pull_request", event, JUDGE_ACTION_MERGE="merge-queue")
    number = int(event["number"])  # type: ignore[call-overload]
    assert local_runner.fake.merge_queue.entries(REPO, "main") == [number]
    local_runner.fake.set_permission(REPO, MAINTAINER, "write")
    local_runner.llm.script(QUICK, scores(*ACCEPT))
    comment = comment_payload(REPO, number, "/judge override reject", MAINTAINER)
    await local_runner.step(
        "issue_comment", workflow_event(comment), JUDGE_ACTION_MERGE="merge-queue"
    )
    assert local_runner.fake.merge_queue.entries(REPO, "main") == []
    assert local_runner.fake.merge_queue.dequeued == [number]


async def test_a_revoke_github_refuses_is_said_on_the_run(local_runner: Runner) -> None:
    number = await auto_merged(local_runner)
    local_runner.llm.script(QUICK, scores(*REJECT))
    local_runner.llm.script(DEEP, scores(*REJECT))
    event = pushed_event(local_runner, number, "# More\n\nthin\n")
    # Both calls at the push, then the auto-merge one at the verdict.
    for _ in range(3):
        local_runner.fake.merge_queue.refuse_next("Pull request is locked")
    await local_runner.step("pull_request", event, JUDGE_ACTION_MERGE="auto-merge")
    head = local_runner.fake.repo(REPO).pulls[number].head_sha
    [run] = [r for r in local_runner.fake.repo(REPO).check_runs.values() if r.head_sha == head]
    assert "GitHub did not turn off auto-merge" in run.output["summary"]
    assert "Pull request is locked" in run.output["summary"]
