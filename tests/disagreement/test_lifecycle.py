"""The disagreement issue's life (bot.disagreement.lifecycle), exhaustively."""

from __future__ import annotations

from typing import Any

import pytest

from bot.disagreement.lifecycle import IssueAction, issue_action
from bot.judge.records import Verdict

SHA = "a" * 40


@pytest.mark.parametrize(
    ("verdict", "known", "expected"),
    [
        (Verdict.ESCALATE, None, IssueAction.OPEN),
        (Verdict.ESCALATE, {"state": "opening"}, IssueAction.OPEN),
        (Verdict.ESCALATE, {"number": 3, "state": "open", "last_sha": "old"}, IssueAction.COMMENT),
        (Verdict.ESCALATE, {"number": 3, "state": "open", "last_sha": SHA}, IssueAction.NONE),
        (Verdict.ESCALATE, {"number": 3, "state": "closed", "last_sha": "old"}, IssueAction.REOPEN),
        (Verdict.ACCEPT, {"number": 3, "state": "open", "last_sha": "old"}, IssueAction.CLOSE),
        (Verdict.ACCEPT, {"number": 3, "state": "closed", "last_sha": "old"}, IssueAction.NONE),
        (Verdict.ACCEPT, None, IssueAction.NONE),
        (Verdict.REJECT, {"number": 3, "state": "open", "last_sha": "old"}, IssueAction.NONE),
        (Verdict.IMPROVE, None, IssueAction.NONE),
        (Verdict.UNDETERMINED, {"number": 3, "state": "open"}, IssueAction.NONE),
    ],
)
def test_issue_action(
    verdict: Verdict, known: dict[str, Any] | None, expected: IssueAction
) -> None:
    assert issue_action(verdict, known, SHA) is expected
