"""What judging announces, and the port through which other features react to it.

Judging imports no feature that reacts to a verdict: it announces three moments through
`VerdictReactions`, and `bot/reactions.py` (the composition layer) lists who reacts, the
way `bot/routing.py` lists routers. The app plugs that list into the hub under
`REACTIONS`; the flow reads it from there.

    before the judges are called   hold(...)      loop prevention may hold an automatic
                                                  judgment: the run's neutral output
    the judges have spoken         judged(...)    the disagreement issue, notifications;
                                                  returns the issue's URL for the run
    every run's final outcome      concluded(...) the merge queue and the breakers count
                                                  it; returns the line the run shows

`concluded` comes before the run is completed, so the run can show its queue position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.records import Verdict, VerdictRecord
from bot.judging.check_run import CheckRunOutput
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.services import HubKey


@dataclass(frozen=True)
class Judged:
    """The judges have spoken at this head."""

    gateway: RepoGateway
    target: Target
    records: Sequence[VerdictRecord]
    verdict: Verdict
    run_url: str
    run_owner: str


@dataclass(frozen=True)
class Concluded:
    """A run's final outcome, judged or not. `content` fingerprints what the judges read
    (None when they read nothing)."""

    config: RepoConfig | None
    target: Target
    verdict: str
    content: str | None = None
    records: Sequence[VerdictRecord] = ()
    actor: str | None = None
    """Who decided, when a person did (an override); None for the judges."""


class VerdictReactions(Protocol):
    async def hold(
        self, context: Context, target: Target, content: str | None
    ) -> CheckRunOutput | None:
        """The output of a neutral run when this automatic judgment must wait for a
        person; None to judge. `content` fingerprints what the judges would read."""

    async def judged(self, context: Context, judged: Judged) -> str | None:
        """Returns the URL of the disagreement issue open for the change, if any."""

    async def concluded(self, context: Context, concluded: Concluded) -> str | None:
        """Returns a line for the run (a queue position, a tripped breaker), if any."""


REACTIONS: HubKey[VerdictReactions] = HubKey("judging's verdict reactions")
