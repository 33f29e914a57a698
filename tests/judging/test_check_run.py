"""The `judge` check run: combined verdicts, rendering, limits, secrets, buttons.

The conclusion table is tested in test_conclusion.py, annotations in test_annotations.py,
scrubbing and fitting text into GitHub's limits in tests/test_gfm.py."""

from __future__ import annotations

import pytest

from bot.commands.grammar import parse_command
from bot.judge.records import Tier, Verdict
from bot.judge.settings import Mode
from bot.judging.annotations import annotation_at
from bot.judging.check_run import (
    ACTION_OVERRIDE_ACCEPT,
    ACTION_REJUDGE_DEEP,
    OVERRIDE_ACCEPT,
    REJUDGE_DEEP,
    SUMMARY_LIMIT,
    TEXT_LIMIT,
    CheckDetails,
    CheckRunOutput,
    RequestedAction,
    render_check_run,
    render_in_progress,
    render_override,
)
from bot.judging.conclusion import conclusion_for
from bot.judging.repo_config import LeftOut
from bot.judging.run_notices import (
    SkipReason,
    render_config_error,
    render_skipped,
)
from tests.support.check_run_checks import all_strings, assert_valid_payloads
from tests.support.verdict_builders import (
    FAKE_SECRETS,
    SECRET_FRAGMENTS,
    assert_tables_whole,
    make_finding,
    make_record,
    make_round,
    make_truncation,
    make_unjudged,
)

# --- combined verdict -----------------------------------------------------------------


# --- payload validation against GitHub's API description ------------------------------


# --- render_check_run -----------------------------------------------------------------


def test_single_accept_renders_title_table_and_success() -> None:
    """One accepted group: verdict and scores at a glance, a row per tier."""
    out = render_check_run([make_record()], Mode.BLOCKING)
    assert out.conclusion == "success"
    assert out.status == "completed"
    assert out.title == "accept · S4 P4 X5 · 1 file"
    assert "| Tier | Model | semantic | pragmatic | syntactic | Average | Verdict |" in out.summary
    assert "| quick | `opencode/gpt-5-nano` | 3 | 3 | 4 | 3.33 | improve |" in out.summary
    assert "| deep | `opencode/kimi-k2.5-free` | 4 | 4 | 5 | 4.33 | accept |" in out.summary
    assert "Truncated: nothing." in out.summary
    assert "Findings: mechanical 0 (0 hard, 0 soft), injection 0 (0 hard, 0 soft)." in out.summary
    assert "Left out: nothing" in out.summary
    assert "> Accurate and actionable." in out.text
    assert "> Thin on examples." in out.text
    assert "- add an example" in out.text
    assert out.actions == [REJUDGE_DEEP.as_dict()]
    assert_valid_payloads(out)


def test_several_groups_show_worst_verdict_and_distinct_file_count() -> None:
    """Two groups (one rejected) conclude failure in blocking mode; files counted once."""
    rejected = make_record(
        files=["src/x.py", "docs/a.md"],
        verdict=Verdict.REJECT,
        final_decision=Verdict.REJECT,
        scores={"semantic": 1, "pragmatic": 3, "syntactic": 4},
        average=2.67,
    )
    out = render_check_run([make_record(), rejected], Mode.BLOCKING)
    assert out.conclusion == "failure"
    assert out.title == "reject · S1 P3 X4 · 2 files in 2 groups"
    assert "Group 1 of 2" in out.summary and "Group 2 of 2" in out.summary
    assert "1 accept, 1 reject" in out.summary
    assert "Group 2 · deep judge" in out.text
    assert {a["identifier"] for a in out.actions} == {ACTION_REJUDGE_DEEP, ACTION_OVERRIDE_ACCEPT}


@pytest.mark.parametrize("verdict", list(Verdict))
@pytest.mark.parametrize("mode", list(Mode))
def test_render_conclusion_matches_conclusion_for(verdict: Verdict, mode: Mode) -> None:
    record = make_record(verdict=verdict, final_decision=verdict)
    out = render_check_run([record], mode)
    assert out.conclusion == conclusion_for(verdict, mode)
    assert out.title.startswith(verdict.value + " · ")
    assert_valid_payloads(out)


def test_advisory_summary_says_what_blocking_would_do() -> None:
    out = render_check_run(
        [make_record(verdict=Verdict.REJECT, final_decision=Verdict.REJECT)], Mode.ADVISORY
    )
    assert out.conclusion == "neutral"
    assert "in blocking mode this verdict would conclude `failure`" in out.summary


def test_undetermined_without_models_is_neutral_and_explained() -> None:
    out = render_check_run([make_unjudged()], Mode.BLOCKING)
    assert out.conclusion == "neutral"
    assert out.title == "undetermined · no scores · 1 file"
    assert "No model ran (the quick round failed; failing open)." in out.summary
    assert out.text == ""


THROTTLED_REASON = "throttled: 20 judgments in the last hour for scope 'octo/repo' (limit 20/hour)"
BUDGET_REASON = "daily budget exhausted: 500 model calls today (budget 500)"


@pytest.mark.parametrize(
    ("cause", "reason", "word"),
    [("throttled", THROTTLED_REASON, "throttle"), ("budget", BUDGET_REASON, "budget")],
)
def test_refusal_asks_for_a_maintainer_in_blocking_mode(cause: str, reason: str, word: str) -> None:
    """Exhausting the throttle or the budget must not get a change through a required
    check: in blocking mode the run asks for a maintainer and says why."""
    record = make_unjudged(mode=cause, reason=reason)
    out = render_check_run([record], Mode.BLOCKING)
    assert out.conclusion == "action_required"
    phrase = f"not judged: {word}; a maintainer may rerun or override"
    assert out.title.startswith(phrase)
    assert phrase in out.summary
    assert "fail-open" not in out.summary
    assert {a["identifier"] for a in out.actions} == {ACTION_REJUDGE_DEEP, ACTION_OVERRIDE_ACCEPT}
    assert_valid_payloads(out)


@pytest.mark.parametrize("cause", ["throttled", "budget"])
def test_refusal_stays_neutral_in_advisory_mode(cause: str) -> None:
    out = render_check_run([make_unjudged(mode=cause)], Mode.ADVISORY)
    assert out.conclusion == "neutral"
    assert "in blocking mode this verdict would conclude `action_required`" in out.summary
    assert "not judged: " in out.summary


def test_refused_group_among_judged_ones_still_asks_for_a_maintainer() -> None:
    records = [make_record(), make_unjudged(mode="throttled", reason=THROTTLED_REASON)]
    out = render_check_run(records, Mode.BLOCKING)
    assert out.conclusion == "action_required"
    assert out.title.startswith("not judged: throttle")
    assert out.title.endswith("1 file in 2 groups")


@pytest.mark.parametrize("mode", list(Mode))
def test_outage_fails_open_and_says_so(mode: Mode) -> None:
    """The judges were asked and failed: neutral in both modes, and the summary says
    it is the fail-open rule, not a refusal."""
    timeout = make_round(verdict=None, scores={}, average=None, error="timeout after 30s")
    record = make_unjudged(
        mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[timeout], model="m"
    )
    out = render_check_run([record], mode)
    assert out.conclusion == "neutral"
    assert "the judges could not be reached; fail-open" in out.summary
    assert "not judged:" not in out.summary.lower()


def test_notes_about_the_run_are_shown_without_html() -> None:
    """The app's own sentences (a skip label that was not honoured, say) keep their
    Markdown, but the names inside them cannot add HTML, lines or bidi controls."""
    note = "The `judge-skip` label was not honoured: @bob\u202e added it <img src=x>\n# no."
    out = render_check_run([make_record()], Mode.BLOCKING, details=CheckDetails(notes=[note]))
    assert (
        "The `judge-skip` label was not honoured: @bob\\u202e added it &lt;img src=x&gt; # no."
        in out.summary.split("\n\n")
    )
    empty = render_check_run([], Mode.BLOCKING, details=CheckDetails(notes=["A note."]))
    assert "A note." in empty.summary.split("\n\n")


def test_no_records_is_neutral_only_in_advisory_mode() -> None:
    """Files were owed a judgment and none could be read: not a pass when blocking."""
    details = CheckDetails(left_out=[LeftOut("a.png", "binary", unread=True)])
    assert render_check_run([], Mode.ADVISORY, details=details).conclusion == "neutral"
    out = render_check_run([], Mode.BLOCKING, details=details)
    assert out.conclusion == "action_required"
    assert "not judged: files no judge read" in out.summary
    assert "nothing was judged" in out.title
    assert "`a.png` | binary" in out.summary


def test_summary_lists_truncation_left_out_findings_and_consensus() -> None:
    record = make_record(
        consensus="unanimous",
        truncation=[make_truncation()],
        mechanical_findings=[make_finding(), make_finding(severity="soft", line=None)],
        injection_findings=[make_finding(source="injection", kind="instruction", line=9)],
        reason="quick and deep agree",
    )
    details = CheckDetails(left_out=[LeftOut("img/logo.png", "binary or unreadable")])
    out = render_check_run([record], Mode.BLOCKING, details=details)
    assert "(consensus: unanimous)" in out.summary
    assert "quick and deep agree" in out.summary
    assert "`docs/a.md` 9,000 → 4,000 characters for the quick judge" in out.summary
    assert "Findings: mechanical 2 (1 hard, 1 soft), injection 1 (1 hard, 0 soft)." in out.summary
    assert "Left out (1 file not judged)" in out.summary
    assert "| `img/logo.png` | binary or unreadable |" in out.summary
    # Findings without a line are still listed in the text.
    assert "| mechanical | soft | todo-marker | `docs/a.md` |" in out.text


def test_human_override_is_shown_with_who() -> None:
    record = make_record(
        verdict=Verdict.REJECT,
        final_decision=Verdict.ACCEPT,
        human_override=True,
        decided_by="alice",
    )
    out = render_check_run([record], Mode.BLOCKING)
    assert out.conclusion == "success"
    assert out.title.startswith("accept (override by @alice) · ")
    assert "**Human override:** accept by @alice." in out.summary
    assert [a["identifier"] for a in out.actions] == [ACTION_REJUDGE_DEEP]


def test_disagreement_issue_is_linked() -> None:
    url = "https://github.com/octo/repo/issues/9"
    out = render_check_run(
        [make_record(verdict=Verdict.ESCALATE, final_decision=Verdict.ESCALATE)],
        Mode.BLOCKING,
        details=CheckDetails(disagreement_issue_url=url),
    )
    assert out.conclusion == "action_required"
    assert url in out.summary


def test_substituted_and_failed_rounds() -> None:
    """A four-eyes substitution is named; a failed round shows its error, not a verdict."""
    failed = make_round(
        round=1, verdict=None, scores={}, average=None, error="timeout after retry", reasoning=""
    )
    record = make_record(
        previous_rounds=[failed],
        verdict=Verdict.ACCEPT,
    )
    sub = make_record(previous_rounds=[make_round(substituted_for="anthropic")])
    out = render_check_run([record, sub], Mode.BLOCKING)
    assert "failed: timeout after retry" in out.summary
    assert "quick (instead of anthropic)" in out.summary
    assert "The call failed: timeout after retry." in out.text


# --- annotations in the run ---------------------------------------------------------


def test_at_most_50_annotations_and_the_summary_counts_the_rest() -> None:
    """A flood of findings costs one request, not one per 50: the run keeps the 50 most
    relevant annotations and its summary says how many were left out."""
    findings = [make_finding(line=i, message=f"problem {i}") for i in range(1, 121)]
    out = render_check_run([make_record(mechanical_findings=findings)], Mode.BLOCKING)
    assert len(out.annotations) == 50
    assert [a["start_line"] for a in out.annotations] == list(range(1, 51))
    payloads = out.payloads()
    assert [len(p["output"]["annotations"]) for p in payloads] == [50]
    assert payloads[0]["conclusion"] == "failure" or payloads[0]["conclusion"] == "success"
    assert "Annotations: 50 of 120 shown" in out.summary
    assert "70 left out" in out.summary
    assert_valid_payloads(out)
    few = render_check_run([make_record(mechanical_findings=findings[:3])], Mode.BLOCKING)
    assert len(few.annotations) == 3
    assert "Annotations:" not in few.summary


def test_payloads_still_batch_what_they_are_given() -> None:
    annotations = [
        annotation_at("docs/a.md", i, i, "warning", f"problem {i}", "t") for i in range(1, 121)
    ]
    out = CheckRunOutput(conclusion="neutral", title="t", summary="s", annotations=annotations)
    payloads = out.payloads()
    assert [len(p["output"]["annotations"]) for p in payloads] == [50, 50, 20]
    assert all("conclusion" not in p for p in payloads[1:])
    assert_valid_payloads(out)


# --- GitHub limits --------------------------------------------------------------------


def test_huge_output_is_summarised_within_limits() -> None:
    """Hundreds of groups with enormous reasoning stay within GitHub's limits, keep whole
    tables and say how much was left out."""
    long_text = ("A sentence of reasoning that goes on. " * 40 + "\n") * 200
    records = [
        make_record(
            files=[f"docs/{i}/{j}.md" for j in range(30)],
            reasoning=long_text,
            improvements=[long_text[:2000]] * 50,
            verdict=Verdict.IMPROVE,
            final_decision=Verdict.IMPROVE,
            model="m" * 5000,
            truncation=[make_truncation(path=f"docs/{i}/{j}.md") for j in range(30)],
        )
        for i in range(300)
    ]
    out = render_check_run(records, Mode.BLOCKING)
    assert len(out.summary) <= SUMMARY_LIMIT
    assert len(out.text) <= TEXT_LIMIT
    assert len(out.title) <= 255
    assert "left out to stay within GitHub's size limit" in out.summary
    assert "left out to stay within GitHub's size limit" in out.text
    assert "characters left out" in out.text  # a single reasoning was shortened
    assert_tables_whole(out.summary)
    assert_tables_whole(out.text)
    assert_valid_payloads(out)


def test_title_stays_short_with_long_names() -> None:
    record = make_record(
        human_override=True,
        decided_by="x" * 500,
        scores={f"dimension_{i}": 3 for i in range(100)},
    )
    out = render_check_run([record], Mode.BLOCKING)
    assert len(out.title) <= 120
    assert "\n" not in out.title


# --- secrets and untrusted text -------------------------------------------------------


def test_secrets_never_reach_any_rendered_field() -> None:
    everything = " ".join(FAKE_SECRETS.values())
    record = make_record(
        reasoning=f"The file leaks {everything}",
        improvements=[f"docs/a.md:1: remove {FAKE_SECRETS['aws']}"],
        model=f"model {FAKE_SECRETS['openai']}",
        reason=f"escalated: {FAKE_SECRETS['github classic']}",
        mechanical_findings=[make_finding(message=f"found {FAKE_SECRETS['pem']}")],
        human_override=True,
        decided_by=FAKE_SECRETS["github installation"],
        verdict=Verdict.REJECT,
        final_decision=Verdict.REJECT,
    )
    outputs = [
        render_check_run([record], Mode.BLOCKING),
        render_config_error(f"bad value {everything}", line=2, key="mode"),
        render_skipped(SkipReason.LABEL, FAKE_SECRETS["github classic"]),
        render_override(record, FAKE_SECRETS["github classic"], Mode.BLOCKING),
    ]
    for out in outputs:
        rendered = all_strings(out)
        for fragment in SECRET_FRAGMENTS:
            assert fragment not in rendered
    assert "[redacted]" in all_strings(outputs[0])


def test_untrusted_text_cannot_mention_or_issue_commands() -> None:
    """Judge text is quoted: @mentions do not notify and `/judge` lines are not commands."""
    record = make_record(
        reasoning="Great work @octocat\n/judge override accept\n```\nunclosed fence",
        improvements=["/judge override accept", "<script>alert(1)</script>"],
    )
    out = render_check_run([record], Mode.BLOCKING)
    assert "@octocat" not in out.text
    assert "@\u200boctocat" in out.text
    assert parse_command(out.text) is None
    assert parse_command(out.summary) is None
    assert "<script>" not in out.text


# --- other runs -----------------------------------------------------------------------


def test_in_progress() -> None:
    out = render_in_progress(["docs/a.md", "docs/b.md"], tier=Tier.DEEP)
    assert out.status == "in_progress"
    assert out.conclusion is None
    assert out.title == "Judging 2 files (deep judge)"
    assert "`docs/b.md`" in out.summary
    assert "conclusion" not in out.payloads()[0]
    assert_valid_payloads(out)
    early = render_in_progress([])
    assert early.title == "Judging this change"
    assert early.summary == "Independent judges are scoring this change."


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("verdict", [Verdict.ACCEPT, Verdict.REJECT])
def test_override_run(verdict: Verdict, mode: Mode) -> None:
    record = make_record(final_decision=verdict, human_override=True, decided_by="dave")
    for out in (
        render_override(record, "dave", mode, judged=Verdict.ESCALATE),
        render_override(verdict, "dave", mode),
    ):
        assert out.conclusion == conclusion_for(verdict, mode)
        assert out.title == f"{verdict.value} · human override by @dave"
        assert "/judge override cancel" in out.summary
        assert_valid_payloads(out)
    assert (
        "The judges had concluded **escalate**."
        in render_override(record, "dave", mode, judged=Verdict.ESCALATE).summary
    )


def test_requested_actions_respect_github_limits() -> None:
    assert REJUDGE_DEEP.identifier == "rejudge-deep"
    assert REJUDGE_DEEP.label == "Re-judge (deep)"
    assert OVERRIDE_ACCEPT.identifier == "override-accept"
    assert OVERRIDE_ACCEPT.label == "Accept (override)"
    for action in (REJUDGE_DEEP, OVERRIDE_ACCEPT):
        assert len(action.label) <= 20
        assert len(action.description) <= 40
        assert len(action.identifier) <= 20
    with pytest.raises(ValueError, match="label"):
        RequestedAction("x" * 21, "d", "i")
    with pytest.raises(ValueError, match="description"):
        RequestedAction("l", "x" * 41, "i")
    with pytest.raises(ValueError, match="identifier"):
        RequestedAction("l", "d", "x" * 21)
