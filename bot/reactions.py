"""The one place that lists what reacts to judging's announcements (`judging/reactions.py`),
as `routing.py` lists the routers. Judging never imports these features; the app plugs
this list into the hub.

    hold       loop prevention (merging.breaker_flow): a tripped breaker or the cooldown
    judged     the disagreement issue (disagreement.sync), then the outage notice count
               (notify.reporting), in that order
    concluded  the merge queue, which also counts the outcome toward the breakers
               (merging.approval)
"""

from __future__ import annotations

from bot.disagreement import sync as disagreements
from bot.intake.dispatch import Context
from bot.judging.check_run import CheckRunOutput
from bot.judging.reactions import Concluded, Judged, VerdictReactions
from bot.judging.target import Target
from bot.merging import approval as merge_approval
from bot.merging import breaker_flow
from bot.notify.reporting import note_judgment


class FeatureReactions:
    async def hold(
        self, context: Context, target: Target, content: str | None
    ) -> CheckRunOutput | None:
        return await breaker_flow.held(context, target, content)

    async def judged(self, context: Context, judged: Judged) -> str | None:
        notifier = context.services.notifier
        issue_url = await disagreements.reconcile(
            judged.gateway,
            context.storage,
            judged.target,
            judged.records,
            judged.verdict,
            judged.run_url,
            owner=judged.run_owner,
            notifier=notifier,
        )
        await note_judgment(notifier, context.storage, judged.records)
        return issue_url

    async def concluded(self, context: Context, concluded: Concluded) -> str | None:
        return await merge_approval.on_concluded(
            context,
            concluded.config,
            concluded.target,
            concluded.verdict,
            actor=concluded.actor or f"judge ({context.delivery.delivery_id})",
            content=concluded.content,
            records=concluded.records,
        )


def build_reactions() -> VerdictReactions:
    return FeatureReactions()
