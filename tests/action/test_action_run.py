"""`judge-bot action` as a real subprocess, for each event a workflow runs it on, against
the fake GitHub (every request checked against GitHub's API description) and the fake LLM."""

from __future__ import annotations

from tests.action.support import HOSTED, MAINTAINER, Runner, workflow_event
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REJECT,
    REPO,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)
from tests.support.merge_helpers import merge_group_event, queue_group


def blocking(runner: Runner) -> None:
    runner.fake.add_commit(
        REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
    )


async def opened(runner: Runner, doc: str = GOOD_DOC) -> tuple[int, str]:
    sha = commit_files(runner.fake, {"docs/notes.md": doc})
    number = open_pull(runner.fake, sha)
    return number, sha


async def test_an_accepted_pull_request_passes_with_its_check_run(runner: Runner) -> None:
    runner.llm.script(QUICK, scores(*ACCEPT))
    number, sha = await opened(runner)
    event = workflow_event(pull_request_payload(runner.fake, "opened", number))
    step = await runner.step("pull_request", event)
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert (run.name, run.head_sha, run.status, run.conclusion) == (
        "judge",
        sha,
        "completed",
        "success",
    )
    assert step.outputs["verdict"] == "accept"
    assert step.outputs["conclusion"] == "success"
    assert step.outputs["go-no-go"] == "GO"
    assert step.outputs["check-run-url"].endswith(f"/{REPO}/runs/{run.id}")
    assert "## Verdict: accept" in step.summary
    assert run.output["summary"] in step.summary
    assert [r.final_decision.value for r in step.records] == ["accept"]
    assert step.records[0].head_sha == sha
    assert step.stdout.strip().startswith("judge: accept (success)")


async def test_a_rejection_is_neutral_in_advisory_mode(runner: Runner) -> None:
    runner.llm.script(QUICK, scores(*REJECT))
    runner.llm.script(DEEP, scores(*REJECT))
    number, _ = await opened(runner, "# Notes\n\nthin\n")
    step = await runner.step(
        "pull_request", workflow_event(pull_request_payload(runner.fake, "opened", number))
    )
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "neutral"
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("reject", "neutral")
    assert step.outputs["go-no-go"] == "NO-GO"


async def test_a_rejection_fails_the_job_in_blocking_mode(runner: Runner) -> None:
    blocking(runner)
    runner.llm.script(QUICK, scores(*REJECT))
    runner.llm.script(DEEP, scores(*REJECT))
    number, _ = await opened(runner, "# Notes\n\nthin\n")
    step = await runner.step(
        "pull_request", workflow_event(pull_request_payload(runner.fake, "opened", number))
    )
    assert step.status == 1
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "failure"
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("reject", "failure")
    assert "Mode: **blocking**" in step.summary


async def test_a_forks_pull_request_without_keys_is_neutral_in_advisory_mode(
    runner: Runner,
) -> None:
    number, sha = await opened(runner)
    event = workflow_event(pull_request_payload(runner.fake, "opened", number), fork="them/hello")
    # GitHub gives a fork's run no secrets: the key input arrives empty.
    step = await runner.step("pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED)
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert (run.head_sha, run.conclusion) == (sha, "neutral")
    assert run.output["title"] == "not judged: the judges' keys are not available to forks"
    assert "/judge override accept" in run.output["summary"]
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("skipped", "neutral")
    assert runner.llm.requests == []


async def test_a_forks_pull_request_without_keys_waits_for_a_maintainer_in_blocking_mode(
    runner: Runner,
) -> None:
    blocking(runner)
    number, _ = await opened(runner)
    event = workflow_event(pull_request_payload(runner.fake, "opened", number), fork="them/hello")
    step = await runner.step("pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED)
    assert step.status == 1
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "action_required"
    assert run.output["summary"].startswith("**Blocking mode: this is not a pass.**")
    assert "comment `/judge rerun`" in run.output["summary"]
    assert step.outputs["conclusion"] == "action_required"
    assert runner.llm.requests == []


async def rejected_in_blocking_mode(runner: Runner) -> tuple[int, str]:
    blocking(runner)
    runner.llm.script(QUICK, scores(*REJECT))
    runner.llm.script(DEEP, scores(*REJECT))
    number, sha = await opened(runner, "# Notes\n\nthin\n")
    step = await runner.step(
        "pull_request", workflow_event(pull_request_payload(runner.fake, "opened", number))
    )
    assert step.status == 1
    return number, sha


async def test_an_authorised_override_accepts_the_head(runner: Runner) -> None:
    number, sha = await rejected_in_blocking_mode(runner)
    runner.fake.set_permission(REPO, MAINTAINER, "write")
    # The comment's workflow runs on the default branch: the pull request's cache is not
    # there, so the head is judged again before the override applies.
    runner.llm.script(QUICK, scores(*REJECT))
    runner.llm.script(DEEP, scores(*REJECT))
    comment = comment_payload(REPO, number, "/judge override accept", MAINTAINER)
    step = await runner.step(
        "issue_comment",
        workflow_event(comment),
        JUDGE_ACTION_DIR=str(runner.home / "comment-cache"),
    )
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert (run.head_sha, run.conclusion) == (sha, "success")
    assert MAINTAINER in run.output["summary"]
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("accept", "success")
    assert step.outputs["go-no-go"] == "GO"
    assert any(record.human_override for record in step.records)
    replies = [c.body for c in runner.fake.repo(REPO).comments.values() if c.issue_number == number]
    assert any(f"@{MAINTAINER}" in body for body in replies)


async def test_an_unauthorised_override_changes_nothing(runner: Runner) -> None:
    number, _ = await rejected_in_blocking_mode(runner)
    runner.fake.set_permission(REPO, "stranger", "read")
    asked = len(runner.llm.requests)
    comment = comment_payload(REPO, number, "/judge override accept", "stranger")
    step = await runner.step(
        "issue_comment",
        workflow_event(comment),
        JUDGE_ACTION_DIR=str(runner.home / "comment-cache"),
    )
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "failure"
    assert len(runner.llm.requests) == asked
    assert step.records == []
    replies = [c.body for c in runner.fake.repo(REPO).comments.values() if c.issue_number == number]
    assert len(replies) == 1 and "@stranger" in replies[0]


async def test_the_author_cannot_override_their_own_pull_request(runner: Runner) -> None:
    number, _ = await rejected_in_blocking_mode(runner)
    runner.fake.set_permission(REPO, "agent", "admin")
    comment = comment_payload(REPO, number, "/judge override accept", "agent")
    step = await runner.step("issue_comment", workflow_event(comment))
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "failure"


async def test_a_push_is_judged_at_its_head(runner: Runner) -> None:
    runner.llm.script(QUICK, scores(*ACCEPT))
    before = runner.fake.repo(REPO).branches["main"]
    sha = commit_files(runner.fake, {"docs/notes.md": GOOD_DOC}, branch="main")
    event = push_payload(
        REPO,
        before=before,
        after=sha,
        ref="refs/heads/main",
        commits=[{"id": sha, "added": ["docs/notes.md"], "author": "agent"}],
    )
    step = await runner.step("push", workflow_event(event))
    assert step.status == 0, step.stderr
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert (run.head_sha, run.conclusion) == (sha, "success")
    assert step.outputs["verdict"] == "accept"


async def test_a_push_without_watched_files_needs_no_run(runner: Runner) -> None:
    before = runner.fake.repo(REPO).branches["main"]
    sha = commit_files(runner.fake, {"src/tool.py": "print('hi')\n"}, branch="main")
    event = push_payload(
        REPO,
        before=before,
        after=sha,
        ref="refs/heads/main",
        commits=[{"id": sha, "added": ["src/tool.py"], "author": "agent"}],
    )
    step = await runner.step("push", workflow_event(event))
    assert step.status == 0, step.stderr
    assert runner.fake.repo(REPO).check_runs == {}
    assert (step.outputs["verdict"], step.outputs["conclusion"]) == ("none", "none")
    assert "No `judge` check run" in step.summary


async def test_a_merge_group_gets_its_judge_check(runner: Runner) -> None:
    runner.llm.script(QUICK, scores(*ACCEPT))
    number, _ = await opened(runner)
    head = queue_group(runner.fake, number)
    event = merge_group_event(runner.fake, "checks_requested", number, head)
    step = await runner.step("merge_group", workflow_event(event))
    assert step.status == 0, step.stderr
    [run] = [r for r in runner.fake.repo(REPO).check_runs.values() if r.head_sha == head]
    assert (run.name, run.conclusion) == ("judge", "success")
    assert step.outputs["verdict"] == "accept"


async def test_an_escalation_opens_the_disagreement_issue(runner: Runner) -> None:
    blocking(runner)
    runner.llm.script(QUICK, scores(*IMPROVE))
    runner.llm.script(DEEP, scores(*IMPROVE))
    number, _ = await opened(runner, "# Notes\n\nfirst\n")
    step = await runner.step(
        "pull_request", workflow_event(pull_request_payload(runner.fake, "opened", number))
    )
    issues = [i for i in runner.fake.repo(REPO).issues.values() if not i.is_pull]
    [issue] = issues
    assert issue.title == f"[JUDGE-DISAGREEMENT] Review needed: {REPO}#{number}"
    assert (step.status, step.outputs["verdict"]) == (1, "escalate")
    [run] = runner.fake.repo(REPO).check_runs.values()
    assert run.conclusion == "action_required"
