"""Who may run a `/judge` command (`authorize`). Pure.

    command      bots     authors*   read/triage/none   write/maintain/admin
    help         no       yes        yes                yes
    invalid      no       yes        yes                yes
    rerun        no       no         no                 yes
    override     no       no         no                 yes
    merge        no       no         no                 yes   (--priority: who may
                                                               override may reorder)

    * the PR author, or the author or committer of any judged commit.

Bots are refused everything, help included: the bot's own replies, or another bot's,
must never start a loop. `rerun` follows the override rules because re-rolling the
judges until one accepts would get around the four-eyes rule as surely as accepting
outright; an outage never blocks the author anyway (undetermined is neutral).
Permission comes from GitHub's collaborator permission API, whose `permission` field
holds the base role (maintain is reported as write, triage as read, custom roles as
their base); `role_name` is shown in replies only.
"""

from __future__ import annotations

from bot.commands.grammar import Command
from bot.judging.four_eyes import Actor, Authorization, AuthorizationFacts, person_decision


def authorize(command: Command, actor: Actor, facts: AuthorizationFacts) -> Authorization:
    """May `actor` run `command`? Rules in the module docstring."""
    if actor.is_bot:
        return Authorization(False, "bot", "commands from bots are ignored")
    if command.kind in ("help", "invalid"):
        return Authorization(True, "ok", "anyone may ask for help")
    return person_decision(actor, facts)
