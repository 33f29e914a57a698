"""`/judge` commands in PR and issue comments: what a comment or a button asks for.

Grammar (one command per comment; the first `/judge` line wins):

    /judge override accept|reject|cancel [<sha>]
    /judge rerun [deep]
    /judge merge --priority urgent|high|normal
    /judge help

The line must start with the word `/judge` (case-insensitive, up to three spaces of
indentation). Only a command a person sees as one counts, so quoting, documenting or
hiding a command never runs it: lines inside fenced code blocks, quoted (`>`) lines
and the lazy continuation lines GitHub draws inside the quote, lines inside HTML
comments (`<!-- ... -->`, across lines too) and lines indented as code (four spaces or
a tab) are ignored (`bot.judge.checks.markdown.shown_lines` decides what is shown). Any other
`/judge ...` line is an `invalid` command, answered with help. An override's optional
`<sha>` (7 to 40 hex digits, a prefix of the head commit) pins the commit it decides
(`bot.commands.meant_head`). `merge --priority` puts the pull request's merge-queue entry
ahead of normal ones (`urgent` ahead of `high`; `normal` takes a priority back).
Who may run what is `bot.commands.policy`; what a command then does is `bot.commands.plan`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bot.gfm import cell, one_line
from bot.judge.checks.markdown import shown_lines
from bot.judging.check_run import ACTION_OVERRIDE_ACCEPT, ACTION_REJUDGE_DEEP

CommandKind = Literal["override", "rerun", "merge", "help", "invalid"]
OverrideAction = Literal["accept", "reject", "cancel"]
PriorityName = Literal["urgent", "high", "normal"]

RAW_LIMIT = 100

_OVERRIDE_ACTIONS: dict[str, OverrideAction] = {
    "accept": "accept",
    "reject": "reject",
    "cancel": "cancel",
}
_COMMAND = re.compile(r"^ {0,3}/judge(?:\s+(?P<rest>.*))?$", re.IGNORECASE)
# Seven hex digits is the short sha GitHub shows; fewer could name several commits.
_SHA = re.compile(r"[0-9a-f]{7,40}")
_OVERRIDE_USAGE = "override needs exactly one of accept, reject, cancel"
_PRIORITIES: dict[str, PriorityName] = {"urgent": "urgent", "high": "high", "normal": "normal"}
_MERGE_USAGE = "merge needs `--priority` and one of urgent, high, normal"


@dataclass(frozen=True)
class Command:
    kind: CommandKind
    action: OverrideAction | None = None
    sha: str | None = None
    """An override's pinned commit: a lowercase prefix of the head sha it decides."""
    deep: bool = False
    priority: PriorityName | None = None
    """`merge --priority`'s level."""
    raw: str = ""
    problem: str | None = None


def _command_lines(body: str) -> list[str]:
    """Lines that could carry a command: shown on GitHub as text, not indented code."""
    return [line for _, line in shown_lines(body) if not line.startswith(("    ", "\t"))]


def _parse_words(words: list[str], raw: str) -> Command:
    if not words:
        return Command("invalid", raw=raw, problem="no subcommand given")
    head, args = words[0].lower(), [w.lower() for w in words[1:]]
    if head == "help":
        if args:
            return Command("invalid", raw=raw, problem="help takes no arguments")
        return Command("help", raw=raw)
    if head == "rerun":
        if not args:
            return Command("rerun", raw=raw)
        if args == ["deep"]:
            return Command("rerun", deep=True, raw=raw)
        return Command("invalid", raw=raw, problem="rerun takes only an optional `deep`")
    if head == "override":
        return _parse_override(args, raw)
    if head == "merge":
        return _parse_merge(args, raw)
    # The problem is shown as prose in the reply: the commenter's word is escaped.
    return Command("invalid", raw=raw, problem=f"unknown subcommand '{cell(head, 30)}'")


def _parse_override(args: list[str], raw: str) -> Command:
    if not args or len(args) > 2 or args[0] not in _OVERRIDE_ACTIONS:
        return Command("invalid", raw=raw, problem=_OVERRIDE_USAGE)
    action = _OVERRIDE_ACTIONS[args[0]]
    if len(args) == 1:
        return Command("override", action=action, raw=raw)
    if _SHA.fullmatch(args[1]) is None:
        problem = f"{_OVERRIDE_USAGE}, then optionally the head's sha (7 to 40 hex digits)"
        return Command("invalid", raw=raw, problem=problem)
    return Command("override", action=action, sha=args[1], raw=raw)


def _parse_merge(args: list[str], raw: str) -> Command:
    if len(args) == 1 and args[0].startswith("--priority="):
        args = ["--priority", args[0].removeprefix("--priority=")]
    if len(args) != 2 or args[0] != "--priority" or args[1] not in _PRIORITIES:
        return Command("invalid", raw=raw, problem=_MERGE_USAGE)
    return Command("merge", priority=_PRIORITIES[args[1]], raw=raw)


def parse_command(body: str) -> Command | None:
    """The first `/judge` command in a comment body, or None when there is none."""
    for line in _command_lines(body):
        match = _COMMAND.match(line.rstrip())
        if match is None:
            continue
        raw = one_line(line.strip(), RAW_LIMIT)
        return _parse_words((match.group("rest") or "").split(), raw)
    return None


def command_for_action(identifier: str) -> Command | None:
    """The command a check-run button stands for (the `requested_action` webhook)."""
    if identifier == ACTION_REJUDGE_DEEP:
        return Command("rerun", deep=True, raw=identifier)
    if identifier == ACTION_OVERRIDE_ACCEPT:
        return Command("override", action="accept", raw=identifier)
    return None
