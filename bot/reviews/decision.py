"""Which review the final outcome at a pull request's head becomes, and what it says. Pure.

accept ────────────> APPROVE
improve, reject ───> REQUEST_CHANGES, with the judges' improvements
escalate ──────────> COMMENT (a person decides)
anything else (skipped, undetermined, held) ──> no review
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from bot.gfm import app_line, bullet_untrusted, code, finish, short_sha
from bot.judge.records import VerdictRecord

ReviewEvent = Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"]

REVIEW_LIMIT = 65_536
MAX_IMPROVEMENTS = 20
_EVENTS: dict[str, ReviewEvent] = {
    "accept": "APPROVE",
    "improve": "REQUEST_CHANGES",
    "reject": "REQUEST_CHANGES",
    "escalate": "COMMENT",
}


def review_enabled(repository_says: bool | None, installation_default: bool) -> bool:
    """`review:` in .github/judge.yml, else JUDGE_REVIEW."""
    return installation_default if repository_says is None else repository_says


def review_event(verdict: str) -> ReviewEvent | None:
    return _EVENTS.get(verdict)


def improvements_of(records: Iterable[VerdictRecord]) -> list[str]:
    """Every record's improvements, in order, each once."""
    seen: dict[str, None] = {}
    for record in records:
        for item in record.improvements:
            if item.strip():
                seen.setdefault(item.strip(), None)
    return list(seen)


def review_body(
    verdict: str,
    sha: str,
    improvements: list[str],
    *,
    decided_by: str | None = None,
    run_url: str = "",
) -> str:
    """The review's text: the verdict at the commit, who decided when a person did, the
    improvements the judges asked for, and the `judge` run for the details."""
    who = f" (decided by @{decided_by})" if decided_by else ""
    lines = [app_line(f"judge-bot: **{verdict}** at {code(short_sha(sha))}{who}.", 400)]
    if verdict == "escalate":
        lines.append("The judges disagree; a person decides (`/judge override accept|reject`).")
    if improvements and verdict in ("improve", "reject"):
        lines += ["", "Improvements:", ""]
        lines.append(bullet_untrusted(improvements, max_items=MAX_IMPROVEMENTS, item_limit=500))
    if run_url:
        lines += ["", f"Details: {run_url}"]
    return finish("\n".join(lines), REVIEW_LIMIT)


# GitHub dismisses only these; a COMMENTED review cannot be dismissed (422).
DISMISSABLE_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED"})
REPLACING_EVENTS = frozenset({"APPROVE", "REQUEST_CHANGES"})


def replaces_earlier(event: ReviewEvent) -> bool:
    """Only a new verdict replaces the App's earlier one; an escalation's COMMENT leaves
    it standing until a person decides."""
    return event in REPLACING_EVENTS


def reviews_to_dismiss(
    reviews: Iterable[tuple[int, str]], submitted_by_app: Iterable[int], newest: int
) -> list[int]:
    """Ids of the App's own earlier reviews GitHub can still dismiss, from the pull
    request's (id, state) reviews. Earlier is a smaller id (GitHub numbers reviews in the
    order they are submitted): two verdicts submitted at once must not dismiss each other."""
    ours = {rid for rid in submitted_by_app if rid < newest}
    return [rid for rid, state in reviews if rid in ours and state in DISMISSABLE_STATES]


def dismissal_message(verdict: str, sha: str) -> str:
    return f"Replaced by judge-bot's newer verdict {verdict} at {short_sha(sha)}."
