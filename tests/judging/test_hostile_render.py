"""Author-controlled text in the `judge` check run cannot break its Markdown (issue
"Hardening", 9).

Paths, titles, labels, logins, model names and model output reach the run's title,
summary, text and annotations. Each test renders hostile values and reads the result
the way GitHub does (tables split on unescaped pipes first, then code spans), so a
pipe cannot split a row, a backtick cannot close a span early, `<`/`>` outside a span
cannot form HTML, a newline cannot end a row, and no bidi control survives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.judge.settings import Mode
from bot.judging.check_run import (
    CheckDetails,
    CheckRunOutput,
    render_check_run,
    render_in_progress,
    render_override,
)
from bot.judging.repo_config import LeftOut
from bot.judging.run_notices import (
    SkipReason,
    render_config_error,
    render_gave_up,
    render_nothing_to_judge,
    render_skipped,
)
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.verdict_builders import make_finding, make_record, make_round

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# The issue's file name, plus a right-to-left override that would show `txt.py` as
# `yp.txt`, and an HTML entity that GitHub would decode into the same control.
HOSTILE_PATH = "src/p|q`r<img src=x>\u202etxt.py"
HOSTILE_DOC = "docs/n|o``te <b>x</b>\u2066.md"
HOSTILE = "x|y`z <img src=x> &#x202e;\u202e\n| --- | broken |\n## heading"


# --- reading Markdown the way GitHub does --------------------------------------------


def table_rows(markdown: str) -> Iterator[list[list[str]]]:
    """Each table as rows of cells: split on pipes not escaped by a backslash (GitHub
    does this before reading code spans), then `\\|` unescaped."""
    table: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            assert line.endswith(" |"), f"cut or broken row: {line!r}"
            cells = re.split(r"(?<!\\)\|", line[1:-1])
            table.append([c.strip().replace("\\|", "|") for c in cells])
        elif table:
            yield table
            table = []


def code_spans(text: str) -> tuple[list[str], str]:
    """CommonMark code spans of one line: their contents, and the text outside them."""
    spans: list[str] = []
    outside: list[str] = []
    at = start = 0
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] != "`":
            at += 1
            continue
        run = len(text[at:]) - len(text[at:].lstrip("`"))
        closing = next(
            (m for m in re.finditer(r"`+", text[at + run :]) if len(m.group()) == run), None
        )
        if closing is None:
            at += run
            continue
        outside.append(text[start:at])
        content = text[at + run : at + run + closing.start()]
        if content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        spans.append(content)
        at = start = at + run + closing.end()
    outside.append(text[start:])
    return spans, "".join(outside)


def assert_safe_markdown(markdown: str) -> None:
    assert not set(BIDI) & set(markdown), "a bidi control reached the output"
    for table in table_rows(markdown):
        widths = {len(row) for row in table}
        assert len(widths) == 1, f"a row has a different number of cells: {table}"
    for line in markdown.splitlines():
        cells = re.split(r"(?<!\\)\|", line) if line.startswith("|") else [line]
        for part in cells:
            _, outside = code_spans(part.replace("\\|", "|"))
            assert not re.search(r"<[A-Za-z!/?]", outside), f"raw HTML in {line!r}"
            assert not re.search(
                r"&#?[A-Za-z0-9]+;",
                outside.replace("&lt;", "").replace("&gt;", "").replace("&amp;", ""),
            ), f"an entity GitHub would decode in {line!r}"


def assert_safe_run(out: CheckRunOutput) -> None:
    assert "\n" not in out.title
    assert not set(BIDI) & set(out.title)
    assert_safe_markdown(out.summary)
    assert_safe_markdown(out.text)
    for annotation in out.annotations:
        for key in ("title", "message"):
            assert not set(BIDI) & set(str(annotation[key]))


def spans_in_tables(markdown: str) -> list[str]:
    return [
        span
        for table in table_rows(markdown)
        for row in table
        for c in row
        for span in code_spans(c)[0]
    ]


# --- the rendered runs ------------------------------------------------------------------


def hostile_record() -> VerdictRecord:
    return make_record(
        files=[HOSTILE_DOC],
        model=HOSTILE,
        reason=HOSTILE,
        reasoning=HOSTILE,
        improvements=[HOSTILE, "# not a heading", f"{HOSTILE_DOC}:3: {HOSTILE}"],
        verdict=Verdict.REJECT,
        final_decision=Verdict.REJECT,
        scores={"semantic": 1, "pragmatic": 2, "syntactic": 2},
        previous_rounds=[
            make_round(model=HOSTILE, substituted_for=HOSTILE, error=HOSTILE, verdict=None)
        ],
        mechanical_findings=[
            make_finding(path=HOSTILE_DOC, kind=HOSTILE, message=HOSTILE, line=3, severity="soft")
        ],
        human_override=True,
        decided_by=HOSTILE,
        models_not_run=True,
        models_not_run_note=HOSTILE,
    )


def test_the_issue_file_name_stays_in_one_cell_and_one_code_span() -> None:
    details = CheckDetails(left_out=[LeftOut(HOSTILE_PATH, HOSTILE)])
    out = render_check_run([make_record()], Mode.BLOCKING, details=details)
    assert_safe_run(out)
    [left_out] = [t for t in table_rows(out.summary) if t[0] == ["File", "Why"]]
    assert len(left_out) == 3
    assert left_out[2][0] == "`` src/p|q`r<img src=x>\\u202etxt.py ``"
    assert "src/p|q`r<img src=x>\\u202etxt.py" in spans_in_tables(out.summary)


def test_every_author_text_in_a_judged_run_is_escaped() -> None:
    record = hostile_record()
    details = CheckDetails(left_out=[LeftOut(HOSTILE_PATH, HOSTILE)])
    out = render_check_run([record, make_record()], Mode.BLOCKING, details=details)
    assert_safe_run(out)
    # The judged file keeps its name, whole, in the findings table's code span.
    shown_doc = HOSTILE_DOC.replace("\u2066", "\\u2066")
    assert f"{shown_doc}:3" in spans_in_tables(out.text)
    # Untrusted text starts no block of its own: no heading, no row, outside a quote.
    for line in [*out.summary.splitlines(), *out.text.splitlines()]:
        assert not line.startswith(("## heading", "| --- | broken")), line


@pytest.mark.parametrize(
    "render",
    [
        lambda: render_in_progress([HOSTILE_PATH, HOSTILE_DOC], tier=Tier.DEEP),
        lambda: render_skipped(SkipReason.LABEL, HOSTILE, label=HOSTILE),
        lambda: render_skipped(SkipReason.COMMIT_MESSAGE, HOSTILE),
        lambda: render_nothing_to_judge(
            "no watched file changed", [LeftOut(HOSTILE_PATH, HOSTILE)]
        ),
        lambda: render_gave_up(HOSTILE),
        lambda: render_config_error(HOSTILE, path=HOSTILE_PATH, line=2, key=HOSTILE),
        lambda: render_override(Verdict.ACCEPT, HOSTILE, Mode.BLOCKING, judged=Verdict.REJECT),
        lambda: render_check_run(
            [], Mode.BLOCKING, details=CheckDetails([LeftOut(HOSTILE_PATH, HOSTILE)])
        ),
    ],
    ids=[
        "in-progress",
        "skip-label",
        "skip-commit",
        "nothing",
        "gave-up",
        "config",
        "override",
        "empty",
    ],
)
def test_every_other_run_escapes_author_text(render: Callable[[], CheckRunOutput]) -> None:
    out = render()
    assert_safe_run(out)


# --- through the webhook endpoint ---------------------------------------------------------


@pytest.fixture
def bot(advisory_bot: Harness) -> Harness:
    return advisory_bot


async def test_hostile_file_names_in_a_pull_request(bot: Harness) -> None:
    """The issue's file name, pushed in a pull request next to a judged document."""
    bot.llm.script(QUICK, scores(*ACCEPT, improvements=[f"{HOSTILE}"]))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC, HOSTILE_PATH: "print('hi')\n"})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    assert_safe_markdown(run.output["summary"])
    assert_safe_markdown(run.output.get("text") or "")
    assert "src/p|q`r<img src=x>\\u202etxt.py" in spans_in_tables(run.output["summary"])
