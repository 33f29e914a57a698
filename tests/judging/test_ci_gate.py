"""CI on the head commit: what the judges see, when judging waits, when the wait ends."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.github.types import CiCheck
from bot.judging.ci_gate import (
    CiEvent,
    awaited_keys,
    ci_event,
    for_judges,
    infra_failure,
    matters,
    others,
    rerun_finished,
    summary_lines,
    wait_for_ci,
)
from bot.judging.target import Target

TARGET = Target("o/r", 1, "a" * 40, "main", "o/r#1", "pull_request.opened", pull_number=1)


def check(name: str, state: str, **more: Any) -> CiCheck:
    return CiCheck(name, more.pop("kind", "check"), state, **more)


def test_the_apps_own_run_is_not_ci() -> None:
    checks = [
        check("judge", "neutral", app_id=12345),
        check("judge", "success", app_id=777),  # another app's check of the same name
        check("judge", "pending"),
        check("judge", "error", kind="status"),
    ]
    assert others(checks, "12345") == [checks[1], checks[3]]
    assert others(checks, None) == [checks[3]]


@pytest.mark.parametrize(
    ("ci", "waits"),
    [
        (check("build", "timed_out"), True),
        (check("build", "cancelled"), True),
        (check("build", "startup_failure"), True),
        (check("build", "error", kind="status"), True),
        (check("build", "failure"), False),
        (check("build", "failure", kind="status"), False),
        (check("build", "pending"), False),
        (check("build", "success"), False),
    ],
)
def test_infrastructure_failures_and_timeouts_make_judging_wait(ci: CiCheck, waits: bool) -> None:
    assert infra_failure(ci) is waits
    required = replace(ci, required=True)
    assert (wait_for_ci([required], TARGET) is not None) is waits


@pytest.mark.parametrize(
    ("ci", "wait_for", "waits"),
    [
        (check("tests", "timed_out", required=True), (), True),
        (check("tests", "timed_out", required=False), (), False),
        (check("tests", "timed_out"), (), False),  # a push: nothing is known to be required
        (check("tests", "cancelled", app_slug="github-actions"), ("GitHub-Actions",), True),
        (check("tests", "cancelled", app_slug="github-actions"), ("circleci",), False),
        (check("tests", "cancelled"), ("github-actions",), False),
        # Anyone with write access can post a status: only a required one holds the judges.
        (check("deploy", "error", kind="status"), ("github-actions",), False),
        (check("deploy", "error", kind="status", required=True), (), True),
    ],
)
def test_only_checks_that_matter_hold_the_judges(
    ci: CiCheck, wait_for: tuple[str, ...], waits: bool
) -> None:
    assert matters(ci, wait_for) is waits
    assert (wait_for_ci([ci], TARGET, wait_for) is not None) is waits


def test_a_wait_names_its_checks_and_what_ends_it() -> None:
    waiting = wait_for_ci(
        [
            check("tests", "timed_out", app_slug="github-actions"),
            check("lint", "success"),
            check("deploy", "error", kind="status", required=True),
            check("e2e", "cancelled", app_slug="github-actions"),
        ],
        TARGET,
        ("github-actions",),
    )
    assert waiting is not None
    assert waiting.awaiting == (
        "check:tests",
        "app:github-actions",
        "status:deploy",
        "check:e2e",
    )
    assert waiting.output.conclusion == "neutral"
    assert "`tests` (timed_out)" in waiting.output.summary
    assert "waiting for CI" in waiting.output.title


def test_a_person_asking_for_a_judgment_does_not_wait() -> None:
    failed = [check("tests", "timed_out", required=True)]
    assert wait_for_ci(failed, TARGET.rerun("command.rerun")) is None
    assert wait_for_ci(failed, TARGET.rerun("pull_request.unlabeled")) is not None


def test_awaited_keys_are_listed_once() -> None:
    failed = [check("a", "timed_out", app_slug="ci"), check("b", "timed_out", app_slug="ci")]
    assert awaited_keys(failed) == ("check:a", "app:ci", "check:b")


def test_the_judges_see_ci_with_secrets_redacted() -> None:
    token = "ghp_" + "A1b2C3d4" * 5
    [result] = for_judges([check("tests", "failure", required=True, excerpt=f"token {token}")])
    assert (result.name, result.state, result.required) == ("tests", "failure", True)
    assert token not in result.excerpt


def test_the_summary_lists_red_required_checks() -> None:
    checks = [
        check("tests", "failure", required=True),
        check("style", "failure", required=False),
        check("slow", "timed_out", required=True),
        check("docs", "success", required=True),
    ]
    [line] = summary_lines(checks)
    assert "1 red required check" in line and "`tests` (failure)" in line
    assert "style" not in line
    assert summary_lines(checks[1:]) == []


def test_without_required_checks_known_every_red_check_is_listed() -> None:
    checks = [check(f"c{n}", "failure") for n in range(12)]
    [line] = summary_lines(checks)
    assert "12 red checks" in line and "and 2 more" in line


def run_payload(name: str, conclusion: str | None, app_id: int = 99) -> dict[str, Any]:
    return {
        "check_run": {
            "head_sha": "a" * 40,
            "name": name,
            "conclusion": conclusion,
            "app": {"id": app_id, "slug": "ci"},
        }
    }


def test_webhooks_are_read_as_ci_events() -> None:
    assert ci_event("check_run", run_payload("tests", "success")) == CiEvent(
        "check_run", "a" * 40, "tests", "success", 99, "ci"
    )
    suite = {"check_suite": {"head_sha": "b" * 40, "conclusion": None, "app": "?"}}
    assert ci_event("check_suite", suite) == CiEvent("check_suite", "b" * 40, "", "pending")
    status = {"sha": "c" * 40, "state": "success", "context": "ci/build"}
    assert ci_event("status", status) == CiEvent("status", "c" * 40, "ci/build", "success")
    assert ci_event("status", {"sha": "c" * 40}) is None
    assert ci_event("check_run", {}) is None
    assert ci_event("push", {"push": {}}) is None


AWAITING = ("check:tests", "app:ci", "status:ci/build")


@pytest.mark.parametrize(
    ("event", "ends"),
    [
        (CiEvent("check_run", "s", "tests", "success"), True),
        (CiEvent("check_run", "s", "tests", "failure"), True),
        (CiEvent("check_run", "s", "lint", "success"), False),
        (CiEvent("check_run", "s", "tests", "timed_out"), False),
        (CiEvent("check_run", "s", "tests", "pending"), False),
        (CiEvent("check_run", "s", "tests", "success", app_id=12345), False),
        (CiEvent("check_suite", "s", "", "success", app_slug="ci"), True),
        (CiEvent("check_suite", "s", "", "success", app_slug="other"), False),
        (CiEvent("status", "s", "ci/build", "success"), True),
        (CiEvent("status", "s", "ci/build", "error"), False),
        (CiEvent("status", "s", "ci/build", "pending"), False),
        (CiEvent("check_run", "", "tests", "success"), False),
    ],
)
def test_when_a_rerun_ends_the_wait(event: CiEvent, ends: bool) -> None:
    assert rerun_finished(AWAITING, event, "12345") is ends
    assert rerun_finished((), event, "12345") is False


def test_an_event_of_the_app_itself_never_ends_a_wait() -> None:
    mine = CiEvent("check_run", "s", "tests", "success", app_id=7)
    assert rerun_finished(AWAITING, mine, "7") is False
    assert rerun_finished(AWAITING, replace(mine, app_id=None), "7") is True
