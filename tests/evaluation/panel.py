"""A scripted panel for docs/eval-example.jsonl: what the fake LLM server's two judges
say about each change, found by the task's description in the prompt.

It is wrong where a real panel might be, so every figure has something to count: it
accepts `wrong-cause` (a false negative), asks to improve `terse-but-right` (a false
positive, escalated), and reads `release-notes` differently when the upgrade file comes
first (swap inconsistency).
"""

from __future__ import annotations

from typing import Any

from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply

QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"


def answer(semantic: int, pragmatic: int, syntactic: int, reasoning: str) -> dict[str, Any]:
    improvements = [] if min(semantic, pragmatic, syntactic) >= 4 else ["say more"]
    return {
        "scores": {"semantic": semantic, "pragmatic": pragmatic, "syntactic": syntactic},
        "reasoning": reasoning,
        "improvements": improvements,
    }


ACCEPT = answer(5, 4, 5, "clear and actionable")
IMPROVE = answer(3, 3, 4, "thin")
REJECT = answer(1, 2, 3, "does not do the task")

SCRIPT: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "Report on the cache rollout": (ACCEPT, ACCEPT),
    "Summarise the 12 March incident": (ACCEPT, ACCEPT),
    "Write the on-call guide": (REJECT, REJECT),
    "Explain why the nightly export failed": (ACCEPT, ACCEPT),
    "Add the restore steps to the database runbook": (ACCEPT, ACCEPT),
    "Note the new retention period": (IMPROVE, IMPROVE),
    "Plan the Q3 reliability work": (REJECT, IMPROVE),
}
BIASED = "Release notes for 2.4"


def respond(recorded: RecordedRequest) -> Reply:
    text = recorded.user_text
    tier = 0 if recorded.model == QUICK else 1
    if BIASED in text:
        upgrade_first = text.index("2.4-upgrade.md") < text.index("2.4-changes.md")
        return Reply.json(IMPROVE if upgrade_first else ACCEPT)
    for description, replies in SCRIPT.items():
        if description in text:
            return Reply.json(replies[tier])
    return Reply.server_error()


def script_panel(server: FakeOpenAIServer) -> None:
    server.responder = respond
