"""Reference pages agree with the code and speak to readers who have only this repository.

* docs/repo-config.md's `rubrics` row names every rubric a glob may pick.
* docs/events/push.md and docs/events/pull_request.md say what `rules.claim_action` does
  when one commit comes both as a push and in a pull request: the pull request judges it.
* No page sends readers to documents they do not have: the design notes judge-bot was
  first written from ("seed 000", "phase A/B") are named nowhere; the pages say what the
  rule is instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.judge.records import RubricName
from bot.judging.rules import ClaimAction, claim_action
from bot.judging.state import ShaState

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EVENTS = DOCS / "events"


def test_the_rubrics_row_names_every_rubric() -> None:
    text = (DOCS / "repo-config.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| `rubrics` |")]
    meaning = row.split(" | ")[2]
    named = set(re.findall(r"`([a-z]+)`", meaning))
    assert {rubric.value for rubric in RubricName} <= named


# -- which event judges a commit that comes both ways ------------------------------------------


def claimed(*, by_pull: bool) -> ShaState:
    target = {"pull_number": 7} if by_pull else {"pull_number": None}
    return ShaState(owner="first-delivery", target=target)


def test_a_pull_request_takes_over_a_push_and_a_push_never_a_pull_request() -> None:
    """The rule both pages describe."""

    def action(state: ShaState, *, incoming_is_pull: bool) -> ClaimAction:
        return claim_action(
            state,
            owner="second-delivery",
            incoming_is_pull=incoming_is_pull,
            explicit=False,
            owner_failed=False,
        )

    assert action(claimed(by_pull=False), incoming_is_pull=True) is ClaimAction.TAKE_OVER
    assert action(claimed(by_pull=True), incoming_is_pull=False) is ClaimAction.SKIP


@pytest.mark.parametrize("page", ["push.md", "pull_request.md"])
def test_both_event_pages_say_the_pull_request_takes_the_commit_over(page: str) -> None:
    text = " ".join((EVENTS / page).read_text(encoding="utf-8").split())
    assert "takes over a sha a push claimed" in text.replace("`push`", "push")
    assert "a push of a sha a pull request already judges adds nothing" in text
    assert "whichever event is processed first" not in text


# -- no pointers to documents readers do not have ---------------------------------------

JARGON = re.compile(
    r"\bseeds?\b(?:'s?)?(?:\s+\d{3})?|\bphases?\s+[A-C]\b(?:/[A-C])?|\bthe skill\b",
    re.IGNORECASE,
)


def pages() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted(DOCS.glob("*.md")),
        *sorted(EVENTS.glob("*.md")),
    ]


def jargon(text: str) -> list[str]:
    return [match[0] for match in JARGON.finditer(text)]


@pytest.mark.parametrize(
    "page",
    pages(),
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_page_names_no_unpublished_design_notes(page: Path) -> None:
    assert jargon(page.read_text(encoding="utf-8")) == []


def test_the_jargon_pattern_finds_what_it_should_and_nothing_else() -> None:
    found = jargon(
        "Seed 000's plan, the seeds' rule, seed 004 describes, phase A/B label, "
        "phases A and B, the skill lists it."
    )
    assert len(found) == 6
    assert jargon("Seeded random tests, a phase of rollout, the skillful judge.") == []


# -- docs/deploy.md and the files it describes -------------------------------------------------


def publish_flags(text: str) -> set[str]:
    """The `-p` values of the `docker run` lines (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*#?\s*", " ", text)
    runs = [line for line in joined.splitlines() if "docker run" in line]
    return {flag for line in runs for flag in re.findall(r"(?:^|\s)-p\s+(\S+)", line)}


def test_the_dockerfile_publishes_the_port_as_deploy_md_recommends() -> None:
    recommended = publish_flags((DOCS / "deploy.md").read_text(encoding="utf-8"))
    assert recommended and all(flag.startswith("127.0.0.1:") for flag in recommended)
    shown = publish_flags((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    assert shown and shown <= recommended


def test_deploy_md_knows_requirements_txt_is_shipped() -> None:
    assert (ROOT / "requirements.txt").read_text(encoding="utf-8").split() == ["."]
    text = " ".join((DOCS / "deploy.md").read_text(encoding="utf-8").split())
    assert "has only `pyproject.toml`" not in text
    assert "Add a `requirements.txt`" not in text
