"""Submit the review of a final outcome (review mode), once per head sha and verdict.

Called from `merging.approval.on_concluded`, so a judged verdict and a person's override
both reach it. A review is claimed in storage before it is sent, so a retried delivery
does not submit it twice; a send that fails gives the claim back and raises (the
delivery is retried). GitHub refusing it (422: the App's own pull request) is logged.

The ids of the App's submitted reviews are kept per pull request, so a new verdict
dismisses exactly the App's own earlier APPROVE / REQUEST_CHANGES (never a person's).
A dismissal GitHub refuses or that fails is logged: the new review already stands.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
from gidgethub import BadRequest, GitHubException
from gidgethub.abc import GitHubAPI

from bot.intake.dispatch import Context
from bot.judge.records import VerdictRecord
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.reviews.decision import (
    dismissal_message,
    improvements_of,
    replaces_earlier,
    review_body,
    review_enabled,
    review_event,
    reviews_to_dismiss,
)
from bot.storage.base import Storage

log = logging.getLogger(__name__)

SUBMITTED = "review-submitted"
REVIEW_IDS = "review-ids"
# Far more than a pull request's verdicts that can still be dismissed: dismissing one
# leaves it out of the next list GitHub gives (`reviews_to_dismiss` reads its state).
KEPT_REVIEW_IDS = 50


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
    if not await claim_submission(context.storage, key, event):
        return False
    body = review_body(verdict, target.head_sha, improvements_of(records), decided_by=decided_by)
    client = await context.services.github.installation_client(target.installation_id)
    owner, name = target.repository.split("/", 1)
    try:
        answer = await client.post(
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
            {"owner": owner, "repo": name, "pull_number": target.pull_number},
            data={"commit_id": target.head_sha, "event": event, "body": body},
        )
    except Exception as exc:
        if isinstance(exc, BadRequest) and exc.status_code == 422:
            log.info("review refused by GitHub: %s", exc, extra=context.log_extra())
            return False
        await give_back_submission(context.storage, key)
        raise
    newest = int(answer["id"])
    ours = await remember_review(
        context.storage, f"{target.repository.lower()}#{target.pull_number}", newest
    )
    if replaces_earlier(event) and ours:
        calls = _PullReviews(client, owner, name, target.pull_number)
        await _dismiss_earlier(
            context, calls, ours, newest, dismissal_message(verdict, target.head_sha)
        )
    return True


async def claim_submission(storage: Storage, key: str, event: str) -> bool:
    """Whether this call may submit the review `key` names (nobody claimed it before).
    The row keeps the review's event; nothing reads it back."""
    return await storage.kv_put_if_absent(SUBMITTED, key, {"event": event})


async def give_back_submission(storage: Storage, key: str) -> None:
    """The review was not sent: a retry may claim it again."""
    await storage.kv_delete(SUBMITTED, key)


async def remember_review(storage: Storage, pull: str, newest: int) -> list[int]:
    """Records `newest` as the App's review on `pull`; returns every other one recorded.

    One key per review: two verdicts submitted at once (two workers, or two replicas)
    each add their own, where rewriting one list kept only the last writer's, and the
    review it dropped was never dismissed. Lists written that way are still read."""
    await storage.kv_put(REVIEW_IDS, f"{pull}/{newest:020d}", _id_row(newest))
    rows = await storage.kv_list(REVIEW_IDS, f"{pull}/")
    # Zero-padded keys list oldest first; the oldest beyond the kept number are let go.
    for key, _ in rows[:-KEPT_REVIEW_IDS]:
        await storage.kv_delete(REVIEW_IDS, key)
    legacy = _legacy_ids(await storage.kv_get(REVIEW_IDS, pull))
    ids = {_id_of(row) for _, row in rows} | legacy
    return sorted(ids - {newest})


def _id_row(review_id: int) -> dict[str, Any]:
    return {"id": review_id}


def _id_of(row: Mapping[str, Any]) -> int:
    return int(row["id"])


def _legacy_ids(row: Mapping[str, Any] | None) -> set[int]:
    """The ids of a pull request's one list, as versions before one key per review kept
    them."""
    return {int(rid) for rid in (row or {}).get("ids", [])}


class _PullReviews:
    def __init__(self, client: GitHubAPI, owner: str, repo: str, number: int) -> None:
        self.client = client
        self.vars: dict[str, Any] = {"owner": owner, "repo": repo, "pull_number": number}

    async def states(self) -> list[tuple[int, str]]:
        return [
            (int(item["id"]), str(item["state"]))
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/pulls/{pull_number}/reviews{?per_page}",
                {**self.vars, "per_page": 100},
            )
        ]

    async def dismiss(self, review_id: int, message: str) -> None:
        await self.client.put(
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
            {**self.vars, "review_id": review_id},
            data={"message": message, "event": "DISMISS"},
        )


async def _dismiss_earlier(
    context: Context, calls: _PullReviews, ours: list[int], newest: int, message: str
) -> None:
    try:
        for review_id in reviews_to_dismiss(await calls.states(), ours, newest):
            await calls.dismiss(review_id, message)
    except (GitHubException, aiohttp.ClientError, TimeoutError) as exc:
        # the new review stands; a stale one left is only untidy
        log.warning("earlier review not dismissed: %s", exc, extra=context.log_extra())
