"""The `judge` check run when there is no verdict to show: a skip, nothing to judge, CI
that must run again first, a judge that gave up, an invalid repository config, a loop
held. Each render is neutral as written; `concluded` then gives it the conclusion of
its cause in the mode (bot/judging/conclusion.py): in blocking mode only a skip granted
for this head and "nothing to judge" pass, and every other run says what a maintainer
can do. Each goes through the same `finish_output` as a verdict, so it is scrubbed,
escaped and kept within GitHub's limits too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from bot.gfm import app_line, cell, code, one_line, quote_untrusted, short_sha
from bot.judge.records import Verdict
from bot.judge.settings import Mode, OnOutage
from bot.judging.annotations import Annotation, annotation_at
from bot.judging.check_run import (
    MAX_LISTED_LEFT_OUT,
    NOTE_LIMIT,
    TITLE_TARGET,
    CheckRunOutput,
    finish_output,
)
from bot.judging.conclusion import NEXT_STEP, Cause, run_conclusion
from bot.judging.repo_config import LeftOut


class SkipReason(StrEnum):
    LABEL = "label"
    COMMIT_MESSAGE = "commit-message"


def render_skipped(reason: SkipReason, by: str, *, label: str = "skip-judge") -> CheckRunOutput:
    """Neutral run saying who or what bypassed the judge.

    `by` is the login that applied the skip label, or the head commit sha whose message
    carries `[skip judge]`."""
    if reason is SkipReason.LABEL:
        # The title is plain text; the summary is Markdown, where a login is escaped.
        who = f"@{one_line(by, 39)}" if by else "someone"
        shown = f"@{cell(by, 39)}" if by else "someone"
        title = f"skipped · label {one_line(label, 50)} by {who}"
        summary = (
            f"Judging was bypassed: {shown} applied the {code(label, 50)} label. "
            "Remove the label to judge this change."
        )
    else:
        sha = short_sha(one_line(by, 40)) if by else "the head commit"
        title = f"skipped · [skip judge] in {sha}"
        summary = (
            f"Judging was bypassed: the head commit {code(sha)} has `[skip judge]` in its "
            "message. Push a commit without it to judge this change."
        )
    return finish_output(CheckRunOutput(conclusion="neutral", title=title, summary=summary))


def render_nothing_to_judge(why: str, left_out: Sequence[LeftOut] = ()) -> CheckRunOutput:
    """Neutral run for a change with no file to judge: `why` (the app's own words) and
    the files left out with their reasons, at most MAX_LISTED_LEFT_OUT of them."""
    lines = [f"Nothing to judge: {app_line(why, NOTE_LIMIT)}."]
    if left_out:
        lines.append("")
        # Paths are the author's: a code span keeps backticks and markup from escaping.
        lines.extend(
            f"- {code(item.path)}: {cell(item.reason, 200)}"
            for item in left_out[:MAX_LISTED_LEFT_OUT]
        )
        if len(left_out) > MAX_LISTED_LEFT_OUT:
            lines.append(f"- … and {len(left_out) - MAX_LISTED_LEFT_OUT} more")
    return finish_output(
        CheckRunOutput(conclusion="neutral", title="nothing to judge", summary="\n".join(lines))
    )


def render_unlisted(listed: int) -> CheckRunOutput:
    """The run for a change none of whose listed files is watched, whose list GitHub cut:
    the files it did not list may be watched, and nobody saw them."""
    summary = (
        f"Not judged: none of the {listed:,} changed files GitHub listed is watched, and "
        "GitHub does not list the rest, so nobody can say whether they are."
    )
    return finish_output(
        CheckRunOutput(
            conclusion="neutral", title="not judged · files GitHub does not list", summary=summary
        )
    )


# Failed checks a waiting run names; the rest are counted.
FAILED_CHECKS_LISTED = 10


def render_waiting_for_ci(failed: Sequence[tuple[str, str]]) -> CheckRunOutput:
    """Neutral run for a commit whose CI ended in an infrastructure failure or timeout:
    `failed` names each such check and how it ended. Judged when CI runs again."""
    listed = ", ".join(
        f"{code(name, 80)} ({cell(state, 40)})" for name, state in failed[:FAILED_CHECKS_LISTED]
    )
    if len(failed) > FAILED_CHECKS_LISTED:
        listed += f" and {len(failed) - FAILED_CHECKS_LISTED} more"
    first = one_line(failed[0][0], 60) if failed else "CI"
    summary = (
        f"Not judged yet: CI on this commit ended in an infrastructure failure or a timeout "
        f"({listed}), which says nothing about the change. The judges run when CI runs "
        "again and finishes; re-run the failed checks, or comment `/judge rerun` to judge "
        "now as CI stands."
    )
    return finish_output(
        CheckRunOutput(
            conclusion="neutral",
            title=one_line(f"skipped · waiting for CI to rerun ({first})", TITLE_TARGET),
            summary=summary,
        )
    )


def render_gave_up(error_type: str) -> CheckRunOutput:
    """The run's last word when judging kept failing with `error_type` (an exception's
    class name): neutral, never a failure, because the judge fails open."""
    return finish_output(
        CheckRunOutput(
            conclusion="neutral",
            title="undetermined · the judge could not finish",
            summary=(
                "judge-bot could not finish judging this commit after several attempts "
                f"({code(error_type, 80)}), so it stays neutral. "
                "Comment `/judge rerun` to try again."
            ),
        )
    )


def render_config_error(
    error_message: str,
    *,
    path: str = ".github/judge.yml",
    line: int | None = None,
    key: str | None = None,
) -> CheckRunOutput:
    """Neutral run explaining which line or key of the repository config is wrong;
    with a line it also annotates the config file."""
    where = code(path, 120)
    if line is not None:
        where += f" line {line}"
    if key:
        where += f", key {code(key, 80)}"
    summary = (
        f"The judge configuration in {where} is invalid, so this change was not judged.\n\n"
        + quote_untrusted(error_message, 4_000)
        + "\n\nFix the file and push again; until then the judge stays neutral."
    )
    annotations: list[Annotation] = []
    if line is not None and line >= 1:
        annotations.append(
            annotation_at(path, line, line, "warning", error_message, "invalid judge configuration")
        )
    title = "configuration error · " + (f"line {line}" if line else path)
    if key:
        title += f" · {key}"
    return finish_output(
        CheckRunOutput(
            conclusion="neutral",
            title=one_line(title, TITLE_TARGET),
            summary=summary,
            annotations=annotations,
        )
    )


def concluded(
    output: CheckRunOutput, cause: Cause, mode: Mode, on_outage: OnOutage = OnOutage.PASS
) -> CheckRunOutput:
    """A run without the judges' verdict, with its cause's conclusion in this mode. One
    that does not pass says so first, and what a maintainer can do next."""
    conclusion = run_conclusion(Verdict.UNDETERMINED, mode, cause, on_outage)
    if conclusion == "neutral":
        return finish_output(replace(output, conclusion=conclusion))
    summary = (
        "**Blocking mode: this is not a pass.** A maintainer can "
        f"{NEXT_STEP[cause]}.\n\n{output.summary}"
    )
    return finish_output(replace(output, conclusion=conclusion, summary=summary))
