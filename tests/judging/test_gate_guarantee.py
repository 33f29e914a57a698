"""The gate's guarantee, tried as a hostile author would, through the real endpoint.

In blocking mode a passing `judge` check (success, or neutral, which GitHub counts as a
pass) means judged in full and accepted at this head, nothing owed, a skip granted for
this head, or a provider outage. Each test here is a way an author got a pass before.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    QUICK,
    REJECT,
    REPO,
    Harness,
    comment_payload,
    commit_files,
    harness,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)

pytestmark = pytest.mark.usefixtures("fake_github")


def configure(bot: Harness, text: str) -> None:
    bot.fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure", branch="main")


def judge_run(bot: Harness, sha: str) -> Any:
    [run] = [r for r in bot.check_runs(sha=sha) if r.name == "judge"]
    return run


async def open_pull_request(
    bot: Harness, files: Mapping[str, str | None] | None = None, **commit: str
) -> tuple[int, str]:
    sha = commit_files(bot.fake, dict(files or {"docs/notes.md": GOOD_DOC}), **commit)
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number, sha


# -- 1. CI the author controls does not hold the judges ----------------------------------


async def test_an_authors_own_error_status_does_not_hold_the_judges(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    # One API call of the author's: an `error` status for a context nobody requires.
    bot.fake.add_status(REPO, sha, "my/own-context", "error", creator="agent")
    bot.fake.add_check_run(REPO, sha, "lint", conclusion="cancelled", app_slug="github-actions")
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    run = judge_run(bot, sha)
    assert len(bot.llm.requests) == 1, "judged, not waiting"
    assert run.conclusion == "success"


async def test_a_required_check_that_timed_out_waits_without_passing(
    advisory_bot: Harness,
) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.fake.require_checks(REPO, "main", "tests")
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    bot.fake.add_check_run(REPO, sha, "tests", conclusion="timed_out")
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    run = judge_run(bot, sha)
    assert bot.llm.requests == []
    assert run.conclusion == "action_required"
    assert "waiting for CI to rerun" in run.output["title"]
    assert run.output["summary"].startswith("**Blocking mode: this is not a pass.**")
    assert "re-run the failed checks" in run.output["summary"]


async def test_a_named_ci_app_is_waited_for_and_the_wait_is_neutral_in_advisory_mode(
    advisory_bot: Harness,
) -> None:
    bot = advisory_bot
    configure(bot, "ci:\n  wait_for: [github-actions]\n")
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    bot.fake.add_check_run(REPO, sha, "build", conclusion="cancelled", app_slug="github-actions")
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    run = judge_run(bot, sha)
    assert bot.llm.requests == []
    assert run.conclusion == "neutral"
    assert "waiting for CI to rerun (build)" in run.output["title"]


# -- 5. a watched file no judge can read ---------------------------------------------------


@pytest.mark.parametrize(("mode", "conclusion"), [("blocking", "action_required")])
async def test_one_nul_byte_is_not_a_pass(
    advisory_bot: Harness, mode: str, conclusion: str
) -> None:
    bot = advisory_bot
    configure(bot, f"mode: {mode}\n")
    _, sha = await open_pull_request(bot, {"docs/notes.md": "# Notes\n\x00\nhidden text\n"})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == conclusion
    assert "binary or unreadable" in run.output["summary"]


async def test_an_unreadable_file_beside_an_accepted_one_is_not_a_pass(
    advisory_bot: Harness,
) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    files = {"docs/notes.md": GOOD_DOC, "docs/blob.md": "\x00\x01binary"}
    _, sha = await open_pull_request(bot, files)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert run.output["title"].startswith("not judged: files no judge read")
    assert "paths.exclude" in run.output["summary"]


async def test_explicitly_excluded_binary_files_need_no_judge(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\npaths:\n  exclude: ['docs/*.bin.md']\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    files = {"docs/notes.md": GOOD_DOC, "docs/image.bin.md": "\x00\x01binary"}
    _, sha = await open_pull_request(bot, files)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"


async def test_a_file_over_max_chars_per_file_is_not_a_pass(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\nlimits:\n  max_chars_per_file: 300\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    _, sha = await open_pull_request(bot, {"docs/notes.md": GOOD_DOC + "More text.\n" * 60})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert "limits.max_chars_per_file" in run.output["summary"]


async def test_files_github_does_not_list_are_not_a_pass(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    payload = pull_request_payload(bot.fake, "opened", number)
    payload["pull_request"]["changed_files"] = 3_500  # GitHub lists 3,000 at most
    await bot.send("pull_request", payload)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert "does not list the rest" in run.output["summary"]


# -- 7, 8. identities GitHub vouches for -------------------------------------------------


async def test_a_typed_author_line_cannot_use_the_skip_marker(advisory_bot: Harness) -> None:
    """`git -c user.name=lead commit -m "[skip judge]"`: the author line says lead, but
    the pull request's author (who pushed) is the agent."""
    bot = advisory_bot
    configure(bot, "mode: blocking\nskip_marker_authors: [lead]\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    _, sha = await open_pull_request(bot, message="Notes [skip judge]", author="lead")
    [run] = bot.check_runs(sha=sha)
    assert len(bot.llm.requests) == 1, "judged, not skipped"
    assert run.conclusion == "success"
    assert "commit marker was not honoured" in run.output["summary"]


async def test_a_listed_pusher_may_skip_a_push_with_the_marker(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\nskip_marker_authors: [lead]\n")
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, message="Notes [skip judge]")
    commit = {"id": sha, "message": "Notes [skip judge]", "added": ["docs/notes.md"]}
    payload = push_payload(REPO, before="0" * 39 + "1", after=sha, commits=[commit], sender="lead")
    await bot.send("push", payload)
    [run] = bot.check_runs(sha=sha)
    assert bot.llm.requests == []
    assert run.conclusion == "neutral"
    assert "skip judge" in run.output["title"]


async def test_only_judge_the_agent_judges_it_under_a_persons_name(
    advisory_bot: Harness,
) -> None:
    """`authors: [agent]` and the agent commits as "Jane Doe": the pull request's author
    is the agent, so the change is judged."""
    bot = advisory_bot
    configure(bot, "mode: blocking\nauthors: [agent]\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    _, sha = await open_pull_request(bot, author="Jane Doe")
    [run] = bot.check_runs(sha=sha)
    assert len(bot.llm.requests) == 1
    assert run.conclusion == "success"


async def test_a_push_by_the_agent_is_judged_under_a_persons_name(advisory_bot: Harness) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\nauthors: [agent]\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, author="Jane Doe")
    commit = {"id": sha, "author": "Jane Doe", "added": ["docs/notes.md"]}
    payload = push_payload(REPO, before="0" * 39 + "1", after=sha, commits=[commit], sender="agent")
    await bot.send("push", payload)
    [run] = bot.check_runs(sha=sha)
    assert len(bot.llm.requests) == 1
    assert run.conclusion == "success"


# -- 10. a skip label counts for the head it was granted at --------------------------------


async def test_a_skip_granted_at_one_head_does_not_skip_the_next(advisory_bot: Harness) -> None:
    from tests.judging.test_skip_authorisation import add_skip_label

    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    number, first = await open_pull_request(bot)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await add_skip_label(bot, number, sender="lead")
    [skipped] = bot.check_runs(sha=first)
    assert skipped.conclusion == "neutral" and "skipped" in skipped.output["title"]
    calls = len(bot.llm.requests)
    # The author pushes new content; the label is still on the pull request.
    second = bot.fake.merges.push(REPO, number, {"docs/notes.md": GOOD_DOC + "\nMore.\n"})
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    [run] = bot.check_runs(sha=second)
    assert len(bot.llm.requests) == calls + 1, "the new head is judged"
    assert "skipped" not in run.output["title"]
    assert "before this head was pushed" in run.output["summary"]


# -- the repository's config: a mistake there is no pass ---------------------------------


async def test_an_invalid_config_in_a_blocking_installation_is_not_a_pass(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    async with harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, mode="blocking"
    ) as bot:
        configure(bot, "mode: [oops\n")
        _, sha = await open_pull_request(bot)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert "fix `.github/judge.yml`" in run.output["summary"]


# -- 4. files beyond limits.max_files are judged in further requests ----------------------


async def test_files_beyond_max_files_are_judged_in_further_requests(
    advisory_bot: Harness,
) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\nlimits:\n  max_files: 2\n")
    bot.llm.default = scores(*ACCEPT)
    files = {f"docs/note{n}.md": GOOD_DOC + f"\nPart {n}.\n" for n in range(5)}
    _, sha = await open_pull_request(bot, dict(files))
    [run] = bot.check_runs(sha=sha)
    assert len(bot.llm.requests) == 3, "2 + 2 + 1 files, one request each"
    assert run.conclusion == "success"
    assert "over the limit" not in run.output["summary"]
    judged = {path for request in bot.llm.requests for path in files if path in request.user_text}
    assert judged == set(files)


async def test_one_rejected_batch_fails_the_change(advisory_bot: Harness) -> None:
    """The file past the limit, whose content the judges reject, was once never read."""
    bot = advisory_bot
    configure(bot, "mode: blocking\nlimits:\n  max_files: 1\n")
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    files = {"docs/a.md": GOOD_DOC, "docs/b.md": "# B\n\nthin\n"}
    _, sha = await open_pull_request(bot, files)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"


async def test_a_cancelled_override_brings_the_refusal_back(advisory_bot: Harness) -> None:
    """A maintainer read the unreadable file and accepted; cancelling that decision
    shows the judges' run as it was: not a pass."""
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    files = {"docs/notes.md": GOOD_DOC, "docs/blob.md": "\x00\x01binary"}
    number, sha = await open_pull_request(bot, files)
    bot.fake.set_permission(REPO, "lead", "maintain")
    accept = comment_payload(REPO, number, "/judge override accept", "lead")
    await bot.send("issue_comment", accept)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    await bot.send("issue_comment", comment_payload(REPO, number, "/judge override cancel", "lead"))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert "docs/blob.md" in run.output["summary"]


async def test_a_push_whose_compare_may_be_cut_is_not_a_pass(advisory_bot: Harness) -> None:
    """GitHub's compare lists at most 300 files; a push that needs it (its payload's
    lists were cut) and gets 300 back may hide more, unread."""
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.default = scores(*ACCEPT)
    files: dict[str, str | None] = {f"src/f{n:03}.py": "x = 1\n" for n in range(299)}
    files["docs/notes.md"] = GOOD_DOC
    sha = commit_files(bot.fake, files, branch="main")
    payload = push_payload(
        REPO,
        before=bot.fake.repo(REPO).commits[sha].parents[0],
        after=sha,
        commits=[{"id": sha}],
        ref="refs/heads/main",
        sender="agent",
    )
    for commit in payload["commits"]:  # the payload's lists were cut: compare is asked
        del commit["added"], commit["modified"], commit["removed"]
    await bot.send("push", payload)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    assert "GitHub listed 300 of the changed files" in run.output["summary"]


# -- 3. an accept from a cut view is not an accept ---------------------------------------


async def test_a_quick_accept_of_a_cut_note_goes_to_the_deep_judge(advisory_bot: Harness) -> None:
    """The quick judge reads 4,000 characters of a 6,000-character note; the deep judge
    reads it all and rejects its last section."""
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    bot.llm.script(DEEP, scores(*REJECT))
    note = GOOD_DOC + "A sourced paragraph.\n" * 260 + "## Last section\n\nUnsupported claim.\n"
    assert 5_500 < len(note) < 6_500
    _, sha = await open_pull_request(bot, {"docs/notes.md": note})
    [run] = bot.check_runs(sha=sha)
    assert [len(bot.llm.requests_for(QUICK)), len(bot.llm.requests_for(DEEP))] == [1, 1]
    assert "Unsupported claim." in bot.llm.requests_for(DEEP)[0].user_text
    assert run.conclusion == "failure"


# -- 9. trailers may exclude a family, never make the panel more lenient ------------------


async def test_trailers_naming_the_deeper_judges_leave_no_lone_quick_accept(
    advisory_bot: Harness,
) -> None:
    """Two Co-authored-by lines name the deep and tiebreaker families: they are unseated
    (four-eyes), and the quick judge's accept alone does not pass."""
    bot = advisory_bot
    configure(bot, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*ACCEPT))
    message = (
        "Add notes\n\n"
        "Co-authored-by: Kimi K2 <kimi@moonshot.example>\n"
        "Co-authored-by: Llama 3.3 <llama@meta.example>\n"
    )
    _, sha = await open_pull_request(bot, message=message)
    [run] = bot.check_runs(sha=sha)
    assert len(bot.llm.requests_for(QUICK)) == 1
    assert run.conclusion == "action_required"
    assert "four-eyes" in run.output["summary"]


# -- the one configurable exception ---------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "conclusion"),
    [("", "neutral"), ("on_outage: pass\n", "neutral"), ("on_outage: block\n", "action_required")],
)
async def test_a_provider_outage_passes_unless_the_repository_blocks_on_it(
    advisory_bot: Harness, setting: str, conclusion: str
) -> None:
    bot = advisory_bot
    configure(bot, "mode: blocking\n" + setting)
    bot.llm.script(QUICK, Reply.server_error(), Reply.server_error())
    _, sha = await open_pull_request(bot)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == conclusion
    if conclusion == "action_required":
        assert "`on_outage` is `block`" in run.output["summary"]
