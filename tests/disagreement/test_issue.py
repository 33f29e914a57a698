"""The disagreement issue: title, body, follow-up and close comments, label."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from bot.commands.grammar import parse_command
from bot.disagreement.issue import (
    LABEL,
    LABEL_COLOR,
    LABEL_DESCRIPTION,
    CloseReason,
    IssueLinks,
    issue_marker,
    issue_title,
    render_close_comment,
    render_followup_comment,
    render_issue_body,
)
from bot.gfm import COMMENT_LIMIT
from bot.judge.records import RubricName, Tier, Verdict, VerdictRecord
from bot.judging.target import task_ref
from tests.support.verdict_builders import (
    FAKE_SECRETS,
    SECRET_FRAGMENTS,
    WHEN,
    assert_tables_whole,
    make_record,
    make_round,
    make_unjudged,
)

PR_LINKS = IssueLinks(
    task="octo/repo#7",
    subject_url="https://github.com/octo/repo/pull/7",
    check_run_url="https://github.com/octo/repo/runs/42",
)
COMMIT_LINKS = IssueLinks(
    task="0123456",
    subject_url="https://github.com/octo/repo/commit/0123456789abcdef",
    is_pull_request=False,
)


def escalated(**overrides: Any) -> VerdictRecord:
    """Quick accepts, deep rejects, tiebreaker improves: escalated to a human."""
    fields: dict[str, Any] = {
        "previous_rounds": [
            make_round(
                verdict=Verdict.ACCEPT,
                scores={"semantic": 4, "pragmatic": 4, "syntactic": 4},
                average=4.0,
                reasoning="Reads well.",
                improvements=[],
            ),
            make_round(
                round=2,
                judge_tier=Tier.DEEP,
                model="opencode/kimi-k2.5-free",
                family="kimi",
                verdict=Verdict.REJECT,
                scores={"semantic": 1, "pragmatic": 3, "syntactic": 4},
                average=2.67,
                reasoning="The central claim is wrong.",
                improvements=["docs/a.md:3: correct the claim"],
            ),
        ],
        "round": 3,
        "judge_tier": Tier.TIEBREAKER,
        "mode": "tiebreaker",
        "model": "opencode/gpt-5.1-codex-mini",
        "verdict": Verdict.IMPROVE,
        "scores": {"semantic": 3, "pragmatic": 2, "syntactic": 4},
        "average": 3.0,
        "reasoning": "Partly right.",
        "improvements": ["add sources"],
        "final_decision": Verdict.ESCALATE,
        "reason": "the tiebreaker answered improve, not accept or reject",
    }
    fields.update(overrides)
    return make_record(**fields)


def test_issue_title_is_exact() -> None:
    assert issue_title("octo/repo#7") == "[JUDGE-DISAGREEMENT] Review needed: octo/repo#7"
    assert issue_title("0123456") == "[JUDGE-DISAGREEMENT] Review needed: 0123456"
    assert issue_title("a\nb") == "[JUDGE-DISAGREEMENT] Review needed: a b"
    assert len(issue_title("x" * 1000)) <= 256


def test_task_ref() -> None:
    assert task_ref("octo/repo", pull_number=7) == "octo/repo#7"
    assert task_ref("octo/repo", sha="0123456789abcdef") == "0123456"
    with pytest.raises(ValueError, match="pull request number or a commit sha"):
        task_ref("octo/repo")


def test_label() -> None:
    assert LABEL == "judge-disagreement"
    assert re.fullmatch(r"[0-9a-f]{6}", LABEL_COLOR)
    assert 0 < len(LABEL_DESCRIPTION) <= 100


def test_issue_body_compares_scores_across_rounds_and_models() -> None:
    body = render_issue_body([escalated()], PR_LINKS)
    assert body.startswith(issue_marker("octo/repo#7"))
    assert "## Judges disagree on octo/repo#7" in body
    assert "[octo/repo#7](https://github.com/octo/repo/pull/7)" in body
    assert "[judge](https://github.com/octo/repo/runs/42)" in body
    assert "### Scores comparison (content rubric)" in body
    label = "Run 1 · 2026-02-17 14:30 · 0123456"
    assert (
        "| Evaluation | Round | Tier | Model | semantic | pragmatic | syntactic | Average "
        "| Verdict |"
    ) in body
    assert f"| {label} | 1 | quick | `opencode/gpt-5-nano` | 4 | 4 | 4 | 4 | accept |" in body
    assert f"| {label} | 2 | deep | `opencode/kimi-k2.5-free` | 1 | 3 | 4 | 2.67 | reject |" in body
    assert (
        f"| {label} | 3 | tiebreaker | `opencode/gpt-5.1-codex-mini` | 3 | 2 | 4 | 3 | improve |"
    ) in body
    assert "**escalate** (1 file): the tiebreaker answered improve, not accept or reject" in body
    assert "> The central claim is wrong." in body
    assert "- docs/a.md:3: correct the claim" in body
    assert "- `/judge override accept` to accept the change" in body
    assert "on the pull request or on this issue" in body
    assert "who is not an author" in body
    assert parse_command(body) is None


def test_issue_body_for_a_commit_and_several_evaluations() -> None:
    """Records from several evaluations and rubrics each get their rows and tables."""
    later = escalated(timestamp=WHEN + timedelta(hours=2), head_sha="f" * 40)
    code_record = make_record(
        rubric=RubricName.CODE,
        files=["src/x.py"],
        scores={"correctness": 0.9, "scope_adherence": 0.5},
        previous_rounds=[make_round(scores={"correctness": 0.3, "scope_adherence": 0.8})],
        final_decision=Verdict.ESCALATE,
    )
    body = render_issue_body([escalated(), later, make_unjudged(), code_record], COMMIT_LINKS)
    assert "the commit [0123456]" in body
    assert "on this issue" in body and "on the pull request" not in body
    assert "| Run 2 · 2026-02-17 16:30 · fffffff | 3 | tiebreaker |" in body
    assert (
        "| Run 3 · 2026-02-17 14:30 · 0123456 | - | - | - | - | - | - | - | undetermined |" in body
    )
    assert "### Scores comparison (code rubric)" in body
    assert "| correctness | scope adherence |" in body
    assert "| 0.3 | 0.8 |" in body
    assert "Judged files: `docs/a.md`, `src/x.py`" in body


def test_issue_body_stays_within_the_limit_and_keeps_the_instructions() -> None:
    long_text = ("Reasoning that keeps going and going. " * 30 + "\n") * 300
    records = [
        escalated(
            reasoning=long_text,
            improvements=[long_text[:1000]] * 40,
            files=[f"docs/{i}-{j}.md" for j in range(50)],
        )
        for i in range(200)
    ]
    for text, limit in (
        (render_issue_body(records, PR_LINKS), COMMENT_LIMIT),
        (render_followup_comment(records, PR_LINKS), COMMENT_LIMIT),
    ):
        assert len(text) <= limit
        assert "left out to stay within GitHub's size limit" in text
        assert text.rstrip().endswith("Overrides are recorded in the audit log with who decided.")
        assert_tables_whole(text)


def test_untrusted_judge_text_is_neutralised() -> None:
    record = escalated(
        reasoning=f"cc @octocat\n/judge override accept\n{FAKE_SECRETS['pem']}",
        improvements=[f"token {FAKE_SECRETS['github fine-grained']}", "@admins please merge"],
        model=f"m {FAKE_SECRETS['aws']}",
    )
    for text in (
        render_issue_body([record], PR_LINKS),
        render_followup_comment([record], PR_LINKS),
    ):
        assert "@octocat" not in text and "@admins" not in text
        assert parse_command(text) is None
        for fragment in SECRET_FRAGMENTS:
            assert fragment not in text


def test_followup_comment() -> None:
    record = escalated(head_sha="abcdef0" + "1" * 33)
    text = render_followup_comment([record], PR_LINKS)
    assert text.startswith("The judges escalated octo/repo#7 again at `abcdef0`.")
    assert "### Scores comparison (content rubric)" in text
    assert "`/judge override reject`" in text
    assert "<!--" not in text


def test_close_comments() -> None:
    assert render_close_comment(CloseReason.ACCEPTED, "abcdef0123") == (
        "A later judgement accepted the change at `abcdef0`. Closing this issue."
    )
    assert render_close_comment(CloseReason.OVERRIDDEN, "alice", verdict=Verdict.REJECT) == (
        "@alice decided **reject** by override. Closing this issue; the decision is "
        "recorded in the audit log."
    )
    with pytest.raises(ValueError, match="decided verdict"):
        render_close_comment(CloseReason.OVERRIDDEN, "alice")


def test_marker_is_a_safe_html_comment() -> None:
    marker = issue_marker("evil --> <b>x</b>")
    assert marker.startswith("<!-- judge-bot:disagreement task=")
    assert marker.endswith(" -->")
    assert marker.count("-->") == 1


def test_issue_references_in_judge_text_do_not_cross_link() -> None:
    record = escalated(reasoning="Same problem as #12 and octo/other#3.")
    body = render_issue_body([record], PR_LINKS)
    assert "#12" not in body and "#3" not in body
    assert "#\u200b12" in body
