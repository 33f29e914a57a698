"""The neutral runs without a verdict: skipped, nothing to judge, gave up, config error
(bot.judging.run_notices)."""

from __future__ import annotations

from bot.judging.repo_config import LeftOut
from bot.judging.run_notices import (
    SkipReason,
    render_config_error,
    render_gave_up,
    render_nothing_to_judge,
    render_skipped,
    render_waiting_for_ci,
)
from tests.support.check_run_checks import all_strings, assert_valid_payloads
from tests.support.verdict_builders import FAKE_SECRETS, SECRET_FRAGMENTS


def test_skipped_by_label_names_who() -> None:
    out = render_skipped(SkipReason.LABEL, "carol", label="skip-judge")
    assert out.conclusion == "neutral"
    assert out.title == "skipped · label skip-judge by @carol"
    assert "@carol applied the `skip-judge` label" in out.summary
    assert_valid_payloads(out)


def test_skipped_by_commit_message_names_the_commit() -> None:
    out = render_skipped(SkipReason.COMMIT_MESSAGE, "abcdef1234567890")
    assert out.conclusion == "neutral"
    assert out.title == "skipped · [skip judge] in abcdef1"
    assert "`abcdef1` has `[skip judge]`" in out.summary


def test_config_error_names_line_and_key() -> None:
    out = render_config_error("mode: expected advisory or blocking", line=4, key="mode")
    assert out.conclusion == "neutral"
    assert out.title == "configuration error · line 4 · mode"
    assert "`.github/judge.yml` line 4, key `mode`" in out.summary
    assert out.annotations == [
        {
            "path": ".github/judge.yml",
            "start_line": 4,
            "end_line": 4,
            "annotation_level": "warning",
            "message": "mode: expected advisory or blocking",
            "title": "invalid judge configuration",
        }
    ]
    assert_valid_payloads(out)
    assert render_config_error("unreadable YAML").annotations == []


def test_nothing_to_judge_lists_left_out_files() -> None:
    left_out = [
        LeftOut("src/app.py", "not in the watched paths"),
        LeftOut("docs/gone.md", "removed"),
    ]
    out = render_nothing_to_judge("no watched file changed", left_out)
    assert out.conclusion == "neutral"
    assert out.title == "nothing to judge"
    assert out.summary == (
        "Nothing to judge: no watched file changed.\n"
        "\n"
        "- `src/app.py`: not in the watched paths\n"
        "- `docs/gone.md`: removed"
    )
    assert out.annotations == [] and out.actions == []
    assert_valid_payloads(out)
    why = "no commit of this change was authored or committed by the configured `authors`"
    assert render_nothing_to_judge(why).summary == f"Nothing to judge: {why}."


def test_nothing_to_judge_lists_at_most_50_files() -> None:
    left_out = [LeftOut(f"docs/{i:02}.md", "removed") for i in range(53)]
    out = render_nothing_to_judge("no watched file changed", left_out)
    bullets = [line for line in out.summary.splitlines() if line.startswith("- ")]
    assert len(bullets) == 51
    assert bullets[49] == "- `docs/49.md`: removed"
    assert bullets[50] == "- … and 3 more"
    assert "docs/50.md" not in out.summary
    exactly = render_nothing_to_judge("no watched file changed", left_out[:50])
    assert len(exactly.summary.splitlines()) == 52
    assert "more" not in exactly.summary


def test_nothing_to_judge_escapes_author_paths() -> None:
    """A path is the author's text: it cannot close its code span, start a heading,
    break a table or leak a token into the run."""
    token = FAKE_SECRETS["github classic"]
    hostile = f"docs/`x`|y\n# heading {token}.md"
    out = render_nothing_to_judge(
        "no watched file changed", [LeftOut(hostile, "not in the watched paths")]
    )
    assert out.summary.splitlines()[-1] == (
        "- `` docs/`x`|y # heading [redacted].md ``: not in the watched paths"
    )
    rendered = all_strings(out)
    for fragment in SECRET_FRAGMENTS:
        assert fragment not in rendered


def test_gave_up_is_neutral_and_names_the_error_type() -> None:
    out = render_gave_up("TimeoutError")
    assert out.conclusion == "neutral"
    assert out.title == "undetermined · the judge could not finish"
    assert out.summary == (
        "judge-bot could not finish judging this commit after several attempts "
        "(`TimeoutError`), so it stays neutral. Comment `/judge rerun` to try again."
    )
    assert_valid_payloads(out)
    odd = render_gave_up(f"Bad`Error {FAKE_SECRETS['openai']}")
    assert "(`` Bad`Error [redacted] ``)" in odd.summary
    assert FAKE_SECRETS["openai"] not in all_strings(odd)


def test_waiting_for_ci_is_neutral_and_names_the_checks_safely() -> None:
    failed = [("tests`<b>", "timed_out")] + [(f"job-{n}", "cancelled") for n in range(11)]
    out = render_waiting_for_ci(failed)
    assert out.conclusion == "neutral"
    assert out.title.startswith("skipped · waiting for CI to rerun (tests")
    assert "`/judge rerun`" in out.summary and "and 2 more" in out.summary
    assert "(`` tests`<b> `` (timed_out)," in out.summary, "a name stays inside a code span"
    assert_valid_payloads(out)
    assert render_waiting_for_ci([]).title == "skipped · waiting for CI to rerun (CI)"
