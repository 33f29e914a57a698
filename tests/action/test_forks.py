"""Runs GitHub gives no repository secrets (a fork's pull request, a run Dependabot
started): judged when the panel needs no key, told "not judged" when a judge lacks one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from bot.action.forks import (
    NOT_JUDGED,
    NOT_JUDGED_DEPENDABOT,
    Withheld,
    is_runners_own,
    needs_keys,
    render_no_keys,
    withheld,
)
from bot.judge.settings import JudgeSettings
from tests.action.support import HOSTED, Runner, workflow_event
from tests.support.flow_helpers import (
    GOOD_DOC,
    REPO,
    commit_files,
    open_pull,
    pull_request_payload,
)


def payload(head: str = REPO, sender: str = "octocat") -> dict[str, Any]:
    return {
        "pull_request": {
            "head": {"repo": {"full_name": head}},
            "base": {"repo": {"full_name": REPO}},
        },
        "sender": {"login": sender},
    }


def judges(**settings: Any) -> JudgeSettings:
    return JudgeSettings.model_validate({"quick_model": "q", "deep_model": "d", **settings})


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (payload(), None),
        (payload(head="them/hello"), Withheld.FORK),
        (payload(sender="dependabot[bot]"), Withheld.DEPENDABOT),
        (payload(sender="Dependabot[bot]"), Withheld.DEPENDABOT),
        (
            {
                "pull_request": {
                    "head": {"repo": {"full_name": REPO}},
                    "base": {"repo": {"full_name": REPO}},
                }
            },
            None,
        ),
    ],
)
def test_whose_secrets_github_withholds(event: dict[str, Any], expected: Withheld | None) -> None:
    assert withheld(event) is expected


@pytest.mark.parametrize(
    ("base_url", "own"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.0.0.2:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://llm.localhost:11434/v1", True),
        ("http://ollama:11434/v1", True),  # a service container of the job
        ("http://10.1.2.3/v1", False),
        ("http://gpu.corp.example:8000/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("https://8.8.8.8/v1", False),
        ("", False),
    ],
)
def test_which_endpoints_are_the_runners_own(base_url: str, own: bool) -> None:
    assert is_runners_own(base_url) is own


@pytest.mark.parametrize(
    ("settings", "needs"),
    [
        # A hosted endpoint without its key: the secret was withheld.
        ({"llm_base_url": HOSTED}, True),
        ({"llm_provider": "openai"}, True),
        # The panel needs no key: a server on the runner or a local CLI.
        ({"llm_base_url": "http://127.0.0.1:8080/v1"}, False),
        ({"llm_provider": "claude-cli"}, False),
        # One judge keyless and local, the other hosted without its key: no panel.
        ({"llm_base_url": "http://127.0.0.1:8080/v1", "deep_base_url": HOSTED}, True),
        # A model whose endpoint only its key would have named.
        ({"llm_provider": "anthropic", "quick_model": "q"}, True),
        # An empty key is none.
        ({"llm_base_url": HOSTED, "llm_api_key": SecretStr("")}, True),
        # Keys given (as Dependabot secrets, say): it judges.
        ({"llm_base_url": HOSTED, "llm_api_key": SecretStr("k")}, False),
    ],
)
def test_a_run_without_secrets_judges_when_no_judge_needs_a_key(
    settings: dict[str, Any], needs: bool
) -> None:
    judge_settings = judges(**settings)
    assert (needs_keys(payload(head="them/hello"), judge_settings) is Withheld.FORK) is needs
    # A run with the repository's secrets always judges.
    assert needs_keys(payload(), judge_settings) is None


def test_the_words_say_whose_run_it_is_and_what_a_maintainer_can_do() -> None:
    fork = render_no_keys(Withheld.FORK)
    dependabot = render_no_keys(Withheld.DEPENDABOT)
    assert (fork.title, dependabot.title) == (NOT_JUDGED, NOT_JUDGED_DEPENDABOT)
    assert "comes from a fork" in fork.summary
    assert "Dependabot secrets" in dependabot.summary
    assert all("/judge rerun" in out.summary for out in (fork, dependabot))


def opened(runner: Runner) -> int:
    return open_pull(runner.fake, commit_files(runner.fake, {"docs/notes.md": GOOD_DOC}))


async def test_a_fork_with_a_keyless_local_judge_is_judged(local_runner: Runner) -> None:
    """The fake LLM on the runner's loopback, no key set: the fork's change goes to it."""
    event = workflow_event(
        pull_request_payload(local_runner.fake, "opened", opened(local_runner)),
        fork="them/hello",
    )
    step = await local_runner.step("pull_request", event, JUDGE_LLM_API_KEY="")
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert run.output["title"] != NOT_JUDGED
    assert step.outputs["verdict"] != "skipped"
    assert local_runner.llm.requests or local_runner.llm.model_list_requests


async def test_dependabots_run_without_keys_is_not_judged(local_runner: Runner) -> None:
    event = workflow_event(pull_request_payload(local_runner.fake, "opened", opened(local_runner)))
    event["sender"] = {"login": "dependabot[bot]", "id": 49699333, "type": "Bot"}
    step = await local_runner.step(
        "pull_request", event, JUDGE_LLM_API_KEY="", JUDGE_LLM_BASE_URL=HOSTED
    )
    assert (step.status, step.outputs["conclusion"]) == (0, "neutral")
    [run] = local_runner.fake.repo(REPO).check_runs.values()
    assert run.output["title"] == NOT_JUDGED_DEPENDABOT
    assert local_runner.llm.requests == []
