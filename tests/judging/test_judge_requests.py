"""bot/judging/judge_requests.py: one request per rubric group, or, with a window budget,
as many as the judges need to read every watched file whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from bot.judge.engine import JudgeRequest
from bot.judge.engine.prompts import compose_messages
from bot.judge.engine.review_context import CiResult, FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier, Verdict
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.diffs import unified
from bot.judging.earlier import earlier_verdicts
from bot.judging.judge_requests import JudgeInputs, judge_requests, window_budget
from bot.judging.repo_config import LimitsConfig, RepoConfig, rubric_for
from bot.judging.target import Target
from tests.judging.test_windows import edited, prose
from tests.support.verdict_builders import make_record, make_round

HEAD = "1" * 40
RESEARCH = ResearchRules()
CONFIG = RepoConfig(
    rubrics={"src/**": RubricName.CODE, "plans/**": RubricName.COMPLETION, "**/*.md": "content"},
    sensitive=("docs/secret*.md",),
)


def target(**fields: Any) -> Target:
    defaults: dict[str, Any] = {
        "repository": "Octo/Repo",
        "installation_id": 7,
        "head_sha": HEAD,
        "default_branch": "main",
        "task": "Octo/Repo#12",
        "trigger": "pull_request",
        "title": "Speed up the cache",
    }
    return Target(**{**defaults, **fields})


def earlier_records() -> list[dict[str, Any]]:
    improve = make_round(improvements=["name the rollback owner"])
    return [
        make_record(
            head_sha="e" * 40,
            rubric=rubric,
            verdict=Verdict.IMPROVE,
            final_decision=Verdict.IMPROVE,
            previous_rounds=[improve],
        ).model_dump(mode="json")
        for rubric in (RubricName.CONTENT, RubricName.CODE)
    ]


CI = (
    CiResult(name="tests", state="failure", required=True, excerpt="E assert 1 == 2\n" * 80),
    CiResult(name="lint", state="success", excerpt="0 problems"),
)


def inputs(files: Sequence[JudgedFile], **fields: Any) -> JudgeInputs:
    defaults: dict[str, Any] = {
        "commits": (),
        "directives": ("Keep the tone plain.",),
        "sensitive": frozenset({"docs/secret.md"}),
        "ci": CI,
        "earlier": earlier_records(),
    }
    return JudgeInputs(files=files, **{**defaults, **fields})


def todays_requests(
    target: Target, config: RepoConfig, inputs: JudgeInputs, research: ResearchRules
) -> list[JudgeRequest]:
    """judge_requests as it was before windows, kept here to hold `window_chars=None` to it."""
    groups: dict[RubricName, list[JudgedFile]] = {}
    for judged in inputs.files:
        groups.setdefault(rubric_for(config, judged.path), []).append(judged)
    task = TaskSpec(
        task_id=target.task,
        description=target.title,
        acceptance=config.task.acceptance,
        directives=list(inputs.directives),
    )
    known = frozenset(c.path for c in target.changed or ()) | {f.path for f in inputs.files}
    return [
        JudgeRequest(
            task=task,
            files=group,
            rubric=rubric,
            sensitive=target.force_deep or any(f.path in inputs.sensitive for f in group),
            commit_messages=[c.message for c in inputs.commits],
            repository=target.repository,
            head_sha=target.head_sha,
            scope=target.repository.lower(),
            installation=target.installation_id,
            bypass_cache=target.bypass_cache,
            known_paths=known,
            research=research,
            tag_terms=config.tags,
            context=ReviewContext(
                diffs=[inputs.diffs[f.path] for f in group if f.path in inputs.diffs],
                ci=list(inputs.ci),
                earlier=earlier_verdicts(inputs.earlier, target.head_sha, rubric),
            ),
        )
        for rubric, group in sorted(groups.items())
    ]


def mixed_change() -> tuple[list[JudgedFile], dict[str, FileDiff]]:
    base = prose(40_000, seed=9)
    head = edited(base, [2, 300])
    code_diff = unified(base, head)
    assert code_diff is not None
    files = [
        JudgedFile(path="docs/a.md", content=prose(3_000, seed=1)),
        JudgedFile(path="src/app.py", content=head, status="modified"),
        JudgedFile(path="docs/secret.md", content=prose(100_000, seed=2)),
        JudgedFile(path="plans/p.md", content=prose(500, seed=3)),
        JudgedFile(path="docs/b.md", content=prose(8_000, seed=4)),
    ]
    diffs = {
        "src/app.py": FileDiff(path="src/app.py", diff=code_diff),
        "docs/a.md": FileDiff(path="docs/a.md", diff="@@ -1 +1 @@\n-old\n+new", note="n"),
    }
    return files, diffs


def test_without_window_chars_the_requests_are_todays() -> None:
    files, diffs = mixed_change()
    given = inputs(files, diffs=diffs)
    assert judge_requests(target(), CONFIG, given, RESEARCH) == todays_requests(
        target(), CONFIG, given, RESEARCH
    )
    forced = target(force_deep=True, bypass_cache=True)
    assert judge_requests(forced, CONFIG, given, RESEARCH) == todays_requests(
        forced, CONFIG, given, RESEARCH
    )


def test_a_change_that_fits_is_judged_as_today_with_window_chars() -> None:
    files = [JudgedFile(path=f"docs/{n}.md", content=prose(2_000, seed=n)) for n in range(3)]
    files.append(JudgedFile(path="src/x.py", content="x = 1\n"))
    given = inputs(files)
    windowed = judge_requests(target(), CONFIG, given, RESEARCH, window_chars=32_000)
    assert windowed == todays_requests(target(), CONFIG, given, RESEARCH)


def test_long_and_many_files_become_several_requests_of_one_task() -> None:
    files, diffs = mixed_change()
    requests = judge_requests(
        target(), CONFIG, inputs(files, diffs=diffs), RESEARCH, window_chars=32_000
    )
    assert len(requests) > 3
    assert {r.task.task_id for r in requests} == {"Octo/Repo#12"}
    assert [r.rubric for r in requests] == sorted(r.rubric for r in requests)
    judged = [f.path for r in requests for f in r.files]
    assert set(judged) == {f.path for f in files}
    assert judged.count("docs/secret.md") == 4
    [whole] = [r for r in requests if r.rubric is RubricName.COMPLETION]
    assert whole.task.directives == ["Keep the tone plain."]
    for request in requests:
        if request is whole:
            continue
        # The part's own note comes first, ahead of the repository's directives.
        assert request.task.directives[0].startswith("This request holds")
        assert request.task.directives[1:] == ["Keep the tone plain."]
        assert request.sensitive is any(f.path == "docs/secret.md" for f in request.files)
        assert request.known_paths >= {f.path for f in files}
        assert request.context.ci == list(CI)


def test_batches_follow_limits_max_files() -> None:
    config = CONFIG.model_copy(update={"limits": LimitsConfig(max_files=2)})
    files = [JudgedFile(path=f"docs/{n}.md", content="text\n") for n in range(5)]
    requests = judge_requests(target(), config, inputs(files), RESEARCH, window_chars=32_000)
    assert [len(r.files) for r in requests] == [2, 2, 1]
    assert (
        requests[2]
        .task.directives[0]
        .startswith(
            "This request holds 1 of the 5 files judged by the content rubric (request 3 of 3)"
        )
    )


def test_earlier_verdicts_stay_those_of_the_rubric() -> None:
    files, diffs = mixed_change()
    requests = judge_requests(
        target(), CONFIG, inputs(files, diffs=diffs), RESEARCH, window_chars=32_000
    )
    for request in requests:
        assert request.context.earlier == earlier_verdicts(earlier_records(), HEAD, request.rubric)


@pytest.mark.parametrize("window_chars", [4_000, 12_000, 32_000, 100_000])
@pytest.mark.parametrize("with_context", [True, False])
def test_every_request_is_read_whole_by_a_judge_with_that_budget(
    window_chars: int, with_context: bool
) -> None:
    """What the engine's partial-view rule checks: the prompts.py budget cuts no file."""
    files, diffs = mixed_change()
    given = inputs(files, diffs=diffs) if with_context else inputs(files, ci=(), earlier=())
    requests = judge_requests(target(), CONFIG, given, RESEARCH, window_chars=window_chars)
    paths = {f.path for f in files}
    for request in requests:
        prompt = compose_messages(
            get_rubric(request.rubric),
            request.task,
            request.files,
            Tier.DEEP,
            nonce="n" * 32,
            max_chars=window_chars,
            context=request.context,
        )
        assert [cut for cut in prompt.truncation if cut.path in paths] == []
    assert {f.path for r in requests for f in r.files} == paths


def test_windows_of_one_file_hold_it_all() -> None:
    files, diffs = mixed_change()
    requests = judge_requests(
        target(), CONFIG, inputs(files, diffs=diffs), RESEARCH, window_chars=32_000
    )
    secret = [r.files[0] for r in requests if r.files[0].path == "docs/secret.md"]
    whole = next(f for f in files if f.path == "docs/secret.md").content
    assert "".join(f.content.lstrip("\n") for f in secret).startswith(whole[:20])
    assert sum(len(f.content.lstrip("\n")) for f in secret) == len(whole.lstrip("\n"))


def endpoint_settings(**fields: Any) -> JudgeSettings:
    return JudgeSettings(llm_base_url="http://127.0.0.1:9", llm_api_key="k", **fields)


@pytest.mark.parametrize(
    ("fields", "budget"),
    [
        ({"quick_model": "gpt-5-nano", "deep_model": "kimi-k2.5"}, 32_000),
        (
            {
                "quick_model": "gpt-5-nano",
                "deep_model": "kimi-k2.5",
                "tiebreaker_model": "llama-3.3-70b",
                "tiebreaker_max_chars": 64_000,
            },
            64_000,
        ),
        ({"quick_model": "gpt-5-nano", "deep_model": "kimi-k2.5", "deep_max_chars": 9_000}, 9_000),
        ({"quick_model": "gpt-5-nano", "quick_max_chars": 5_000, "deep_max_chars": 90_000}, 5_000),
        ({"quick_max_chars": 4_500}, 4_500),
    ],
)
def test_window_budget_is_the_deepest_configured_tiers(
    fields: Mapping[str, Any], budget: int
) -> None:
    assert window_budget(endpoint_settings(**fields)) == budget
