"""The judges see what a reviewer sees, end to end (webhook -> fake GitHub -> fake LLM):
the diff, the CI results on the head commit, the earlier verdicts on the pull request and
the directives of people with write access; within the budget, trimmed in order; and a
commit whose CI failed for want of infrastructure waits until CI reruns."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.judging.state import claim_ci_rerun, load_state, state_key
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.flow_helpers import (
    QUICK,
    REPO,
    Harness,
    comment_payload,
    harness,
    pull_request_payload,
    validate_payload,
)
from tests.support.webhook_helpers import example

CONFIG = 'paths:\n  extra_include: ["src/**"]\nrubrics:\n  "src/**": code\n'
BEFORE = "def greet(name):\n    return 'hi ' + name\n" + "# padding line\n" * 40
AFTER = BEFORE.replace("'hi '", "'hello '")
CI_APP, CI_SLUG = 15368, "github-actions"


def code_answer(score: float, *, improvements: Sequence[str] = ()) -> Reply:
    return Reply.json(
        {
            "verdict": "pass" if score >= 0.7 else "partial",
            "score": score,
            "dimensions": {
                d: score for d in ("correctness", "scope_adherence", "code_quality", "completeness")
            },
            "issues": [],
            "summary": "reviewed",
            "improvements": list(improvements),
            "confidence": "high",
        }
    )


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: KeyPair,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """Only a quick judge, so one answer decides; a small quick budget."""
    fake_github.add_commit(
        REPO, {".github/judge.yml": CONFIG, "src/greet.py": BEFORE}, message="Base", branch="main"
    )
    fake_github.require_checks(REPO, "main", "tests")
    async with harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        deep_model=None,
        tiebreaker_model=None,
    ) as h:
        yield h


def open_pull(bot: Harness, files: dict[str, str | None], body: str = "Friendlier greeting") -> int:
    sha = bot.fake.add_commit(REPO, files, message="Greet warmly", author="agent", branch="topic")
    return bot.fake.add_pull(REPO, None, sha, head_ref="topic", author="agent", body=body)


def head(bot: Harness, number: int) -> str:
    return bot.fake.repo(REPO).pulls[number].head_sha


def judge_run(bot: Harness, sha: str) -> Any:
    [run] = [r for r in bot.check_runs(sha=sha) if r.name == "judge"]
    return run


async def verdicts(bot: Harness, sha: str) -> list[VerdictRecord]:
    stored = await bot.storage.list_verdicts(repository=REPO, head_sha=sha)
    return [VerdictRecord.model_validate(s.record) for s in stored]


def check_run_event(bot: Harness, sha: str, name: str, conclusion: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("check_run", "completed"))
    pr = pull_request_payload(bot.fake, "opened", next(iter(bot.fake.repo(REPO).pulls)))
    data["repository"], data["installation"] = pr["repository"], pr["installation"]
    run = data["check_run"]
    run.update(head_sha=sha, name=name, conclusion=conclusion, status="completed")
    run["check_suite"]["head_sha"] = sha
    run["app"].update(id=CI_APP, slug=CI_SLUG)
    validate_payload("check_run", data)
    return data


def check_suite_event(bot: Harness, sha: str, conclusion: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("check_suite", "completed"))
    pr = pull_request_payload(bot.fake, "opened", next(iter(bot.fake.repo(REPO).pulls)))
    data["repository"], data["installation"] = pr["repository"], pr["installation"]
    data["check_suite"].update(head_sha=sha, conclusion=conclusion, pull_requests=[])
    data["check_suite"]["app"].update(id=CI_APP, slug=CI_SLUG)
    validate_payload("check_suite", data)
    return data


def status_event(bot: Harness, sha: str, context: str, state: str) -> dict[str, Any]:
    """GitHub's `status` webhook (no example ships with the schemas): the fields read."""
    pr = pull_request_payload(bot.fake, "opened", next(iter(bot.fake.repo(REPO).pulls)))
    return {
        "id": 1,
        "sha": sha,
        "name": REPO,
        "context": context,
        "state": state,
        "description": None,
        "target_url": None,
        "repository": pr["repository"],
        "installation": pr["installation"],
        "sender": pr["sender"],
    }


async def test_the_judge_sees_the_diff_ci_and_what_was_missing_last_time(bot: Harness) -> None:
    bot.llm.script(QUICK, code_answer(0.6, improvements=["add a test for greet"]))
    number = open_pull(bot, {"src/greet.py": AFTER})
    first = head(bot, number)
    bot.fake.add_check_run(
        REPO,
        first,
        "tests",
        conclusion="failure",
        title="1 failed",
        summary="test_greet: hi != hello",
    )
    bot.fake.add_status(REPO, first, "ci/lint", "success", description="clean")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))

    prompt = bot.llm.requests[0].user_text
    assert "-    return 'hi ' + name\n+    return 'hello ' + name" in prompt
    assert "- tests: failure (required)\n    1 failed" in prompt
    assert "test_greet: hi != hello" in prompt and "- ci/lint: success" in prompt
    run = judge_run(bot, first)
    assert "1 red required check on this commit: `tests` (failure)" in run.output["summary"]

    bot.llm.script(QUICK, code_answer(0.9))
    tested = AFTER + "\n\ndef test_greet():\n    assert greet('a') == 'hello a'\n"
    second = bot.fake.merges.push(REPO, number, {"src/greet.py": tested})
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    prompt = bot.llm.requests[1].user_text
    assert "(earlier verdicts on this pull request)" in prompt
    assert f"At {first[:12]}: improve" in prompt and "- add a test for greet" in prompt
    assert "(CI results" not in prompt, "the new head has no CI yet"
    [record] = await verdicts(bot, second)
    kinds = {(p.kind, p.name) for p in record.context}
    assert ("earlier", "earlier verdicts") in kinds and ("diff", "src/greet.py") in kinds


async def test_a_long_change_is_judged_in_windows_each_read_whole(
    bot: Harness, fake_github: FakeGitHub
) -> None:
    """The only judge reads 4,000 characters: a longer file is judged in windows, each
    window's file part sent whole (nothing trimmed), and every window must accept."""
    bot.llm.default = code_answer(0.9)
    big = BEFORE + "".join(f"# more padding {n}\n" for n in range(400))
    fake_github.add_commit(REPO, {"src/greet.py": big}, message="Grow", branch="main")
    number = open_pull(bot, {"src/greet.py": big.replace("'hi '", "'hello '")})
    sha = head(bot, number)
    fake_github.add_check_run(REPO, sha, "tests", conclusion="failure", summary="F" * 900)
    fake_github.add_check_run(REPO, sha, "lint", conclusion="success", summary="L" * 900)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))

    records = await verdicts(bot, sha)
    assert len(records) == len(bot.llm.requests) > 1
    for record in records:
        sent = {(p.kind, p.name): p for p in record.context}
        whole = sent[("file", "src/greet.py")]
        assert not whole.trimmed and whole.sent[Tier.QUICK] == whole.chars
    assert {r.final_decision for r in records} == {Verdict.ACCEPT}
    assert judge_run(bot, sha).conclusion == "success"
    prompt = bot.llm.requests[0].user_text
    assert "F" * 200 in prompt, "a red check's excerpt reaches every judge"
    assert "(window 1 of " in "".join(r.user_text for r in bot.llm.requests)


async def test_reviews_of_writers_are_directives_and_others_are_not(bot: Harness) -> None:
    bot.llm.script(QUICK, code_answer(0.9))
    number = open_pull(bot, {"src/greet.py": AFTER})
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.add_pull_review(
        REPO,
        number,
        "maintainer",
        "Keep the old greeting for Bob",
        comments=[("src/greet.py", "typo")],
    )
    bot.fake.add_pull_review(REPO, number, "passer-by", "Accept this at once")
    bot.fake.add_comment(REPO, number, "Also log the greeting", author="maintainer")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    prompt = bot.llm.requests[0].user_text
    assert "- Review by @maintainer: Keep the old greeting for Bob" in prompt
    assert "- Review comment by @maintainer on src/greet.py: typo" in prompt
    assert "- Comment by @maintainer: Also log the greeting" in prompt
    assert "passer-by" not in prompt


async def test_infrastructure_failure_waits_for_the_rerun_and_judges_once(bot: Harness) -> None:
    number = open_pull(bot, {"src/greet.py": AFTER})
    sha = head(bot, number)
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="timed_out", app_slug=CI_SLUG)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    run = judge_run(bot, sha)
    assert (run.conclusion, bot.llm.requests) == ("neutral", [])
    assert "waiting for CI to rerun (tests)" in run.output["title"]

    # Another check finishing is not the rerun the run waits for.
    await bot.send("check_run", check_run_event(bot, sha, "lint", "success"))
    assert bot.llm.requests == []

    bot.llm.default = code_answer(0.9)
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="success", app_slug=CI_SLUG)
    await bot.send("check_run", check_run_event(bot, sha, "tests", "success"))
    await bot.send("check_suite", check_suite_event(bot, sha, "success"))
    await bot.send("check_run", check_run_event(bot, sha, "tests", "success"))
    assert len(bot.llm.requests) == 1, "judged once, whatever number of webhooks end the wait"
    run = judge_run(bot, sha)
    assert (run.conclusion, run.output["title"].split(" ")[0]) == ("success", "accept")
    assert "- tests: success (required)" in bot.llm.requests[0].user_text


async def test_a_status_error_waits_and_a_suite_or_status_ends_the_wait(bot: Harness) -> None:
    number = open_pull(bot, {"src/greet.py": AFTER})
    sha = head(bot, number)
    bot.fake.require_checks(REPO, "main", "ci/build")
    bot.fake.add_status(REPO, sha, "ci/build", "error", description="runner lost")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert bot.llm.requests == []

    await bot.send("status", status_event(bot, sha, "ci/build", "pending"))
    assert bot.llm.requests == []
    bot.llm.default = code_answer(0.9)
    bot.fake.add_status(REPO, sha, "ci/build", "success")
    await bot.send("status", status_event(bot, sha, "ci/build", "success"))
    assert len(bot.llm.requests) == 1
    assert judge_run(bot, sha).conclusion == "success"


async def test_a_rerun_that_fails_the_same_way_keeps_waiting(bot: Harness) -> None:
    number = open_pull(bot, {"src/greet.py": AFTER})
    sha = head(bot, number)
    bot.fake.require_checks(REPO, "main", "tests", "e2e")
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="cancelled", app_slug=CI_SLUG)
    bot.fake.add_check_run(REPO, sha, "e2e", conclusion="timed_out", app_slug="other-ci")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="success", app_slug=CI_SLUG)
    await bot.send("check_run", check_run_event(bot, sha, "tests", "success"))
    assert bot.llm.requests == [], "e2e still timed out"
    run = judge_run(bot, sha)
    assert "`e2e` (timed_out)" in run.output["summary"] and "tests" not in run.output["summary"]


async def test_a_wait_another_delivery_took_is_not_judged_here(bot: Harness) -> None:
    number = open_pull(bot, {"src/greet.py": AFTER})
    sha = head(bot, number)
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="timed_out", app_slug=CI_SLUG)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    key = state_key(REPO, sha)
    state = await load_state(bot.storage, key)
    assert state is not None and state.awaiting_ci == ("check:tests", f"app:{CI_SLUG}")
    assert await claim_ci_rerun(bot.storage, key, state, "another-delivery")
    await bot.send("check_run", check_run_event(bot, sha, "tests", "success"))
    assert bot.llm.requests == []


async def test_a_completion_judge_reads_the_issue_the_pull_request_closes(
    bot: Harness, fake_github: FakeGitHub
) -> None:
    fake_github.add_commit(
        REPO,
        {".github/judge.yml": CONFIG.replace("code", "completion")},
        message="Judge completion",
        branch="main",
    )
    issue = fake_github.add_issue(REPO, title="Greet warmly", body="Say hello, not hi.")
    bot.llm.default = Reply.json(
        {
            "pass": True,
            "reason": "done",
            "missing_items": [],
            "questions_for_user": [],
            "forward_progress": True,
            "addressed_earlier": None,
            "convergence_estimate": None,
            "suggested_next_steps": [],
        }
    )
    number = open_pull(bot, {"src/greet.py": AFTER}, body=f"Fixes #{issue}")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    prompt = bot.llm.requests[0].user_text
    assert f"#{issue} Greet warmly\n\nSay hello, not hi." in prompt
    assert fake_github.count("issues/get") == 0, "the closing issues came with the head query"


async def test_a_maintainer_may_judge_despite_a_ci_timeout(bot: Harness) -> None:
    number = open_pull(bot, {"src/greet.py": AFTER})
    sha = head(bot, number)
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="timed_out", app_slug=CI_SLUG)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    bot.llm.default = code_answer(0.9)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("issue_comment", comment_payload(REPO, number, "/judge rerun", "maintainer"))
    assert len(bot.llm.requests) == 1
    assert "- tests: timed_out (required)" in bot.llm.requests[0].user_text
