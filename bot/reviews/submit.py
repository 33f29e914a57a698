"""Submit the review of a final outcome (review mode), once per head sha and verdict.

Called from `merging.approval.on_judged`, so a judged verdict and a person's override
both reach it. A review is claimed in storage before it is sent, so a retried delivery
does not submit it twice; a send that fails gives the claim back and raises (the
delivery is retried). GitHub refusing it (422: the App's own pull request) is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gidgethub import BadRequest

from bot.intake.dispatch import Context
from bot.judge.records import VerdictRecord
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.reviews.decision import improvements_of, review_body, review_enabled, review_event

log = logging.getLogger(__name__)

SUBMITTED = "review-submitted"


async def submit_review(
    context: Context,
    config: RepoConfig | None,
    target: Target,
    verdict: str,
    records: Sequence[VerdictRecord] = (),
    *,
    decided_by: str | None = None,
) -> bool:
    """True when a review was submitted now."""
    event = review_event(verdict)
    wanted = review_enabled(
        None if config is None else config.review, context.services.merge.review
    )
    if target.pull_number is None or event is None or not wanted:
        return False
    key = f"{target.repository.lower()}@{target.head_sha}:{verdict}:{decided_by or ''}"
    if not await context.storage.kv_put_if_absent(SUBMITTED, key, {"event": event}):
        return False
    body = review_body(verdict, target.head_sha, improvements_of(records), decided_by=decided_by)
    client = await context.services.github.installation_client(target.installation_id)
    owner, name = target.repository.split("/", 1)
    try:
        await client.post(
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
            {"owner": owner, "repo": name, "pull_number": target.pull_number},
            data={"commit_id": target.head_sha, "event": event, "body": body},
        )
    except Exception as exc:
        if isinstance(exc, BadRequest) and exc.status_code == 422:
            log.info("review refused by GitHub: %s", exc, extra=context.log_extra())
            return False
        await context.storage.kv_delete(SUBMITTED, key)
        raise
    return True
