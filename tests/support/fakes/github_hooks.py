"""The fake GitHub: the App's webhook deliveries log and redelivery attempts.

Tests add log entries with `add_attempt` (one per attempt; attempts of one event share its
guid). The list is newest first and paged by cursor as GitHub pages it: `per_page` (at most
100) and a `Link: <...?cursor=v1_ID>; rel="next"` header naming the last entry shown. A
redelivery request answers 202 and appends an attempt (`redelivery: true`); with
`deliver_to` set and the event's payload given, the fake sends it there first, signed with
the secret, as GitHub would, and logs the answer's status (`log_redeliveries` false: GitHub
has not logged it yet).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
from multidict import MultiDict

from tests.support.fakes.github_http import FakeGitHubError, Handler, Incoming, Reply, iso

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub
    from tests.support.fakes.github_shapes import Shapes

PER_PAGE_DEFAULT = 30
PER_PAGE_MAX = 100
CURSOR_PREFIX = "v1_"


@dataclass(frozen=True)
class Attempt:
    id: int
    guid: str
    delivered_at: datetime
    status_code: int
    event: str
    action: str | None
    redelivery: bool
    installation_id: int | None
    repository_id: int | None

    @property
    def status(self) -> str:
        if self.status_code == 0:
            return "failed to connect"
        return (
            "OK" if 200 <= self.status_code < 300 else f"Invalid HTTP Response: {self.status_code}"
        )


@dataclass(frozen=True)
class Target:
    url: str
    secret: str


class HookDeliveryHandlers:
    def __init__(self, fake: FakeGitHub, shapes: Shapes) -> None:
        self.fake = fake
        self.shapes = shapes
        self.attempts: list[Attempt] = []
        self.payloads: dict[str, bytes] = {}
        self.redelivery_requests: list[int] = []
        self.deliver_to: Target | None = None
        # False: GitHub has not logged the redeliveries it was asked for yet (it lags).
        self.log_redeliveries = True
        self.delivered = asyncio.Event()
        self._next_id = 9_000_000

    # -- builders ----------------------------------------------------------------------------

    def add_attempt(
        self,
        guid: str,
        *,
        status_code: int = 200,
        delivered_at: datetime | None = None,
        event: str = "pull_request",
        action: str | None = "opened",
        redelivery: bool = False,
        installation_id: int | None = 1,
        payload: bytes | None = None,
    ) -> Attempt:
        """Log one attempt (`status_code` 0: GitHub could not connect)."""
        self._next_id += 1
        attempt = Attempt(
            id=self._next_id,
            guid=guid,
            delivered_at=delivered_at or self.fake.clock(),
            status_code=status_code,
            event=event,
            action=action,
            redelivery=redelivery,
            installation_id=installation_id,
            repository_id=None,
        )
        self.attempts.append(attempt)
        if payload is not None:
            self.payloads[guid] = payload
        return attempt

    def guids_requested(self) -> list[str]:
        by_id = {a.id: a.guid for a in self.attempts}
        return [by_id[i] for i in self.redelivery_requests]

    # -- operations --------------------------------------------------------------------------

    def table(self) -> dict[str, Handler]:
        return {
            "apps/list-webhook-deliveries": self._list,
            "apps/redeliver-webhook-delivery": self._redeliver,
        }

    def _json(self, attempt: Attempt) -> dict[str, Any]:
        return {
            "id": attempt.id,
            "guid": attempt.guid,
            "delivered_at": iso(attempt.delivered_at),
            "redelivery": attempt.redelivery,
            "duration": 0.05,
            "status": attempt.status,
            "status_code": attempt.status_code,
            "event": attempt.event,
            "action": attempt.action,
            "installation_id": attempt.installation_id,
            "repository_id": attempt.repository_id,
            "throttled_at": None,
        }

    async def _list(self, incoming: Incoming) -> Reply:
        per_page = min(PER_PAGE_MAX, int(incoming.query.get("per_page", PER_PAGE_DEFAULT)))
        newest_first = sorted(self.attempts, key=lambda a: a.id, reverse=True)
        status = incoming.query.get("status")
        if status is not None:
            wanted = range(200, 400) if status == "success" else range(400, 600)
            newest_first = [a for a in newest_first if a.status_code in wanted]
        cursor = incoming.query.get("cursor")
        if cursor is not None:
            after = cursor.removeprefix(CURSOR_PREFIX)
            if not cursor.startswith(CURSOR_PREFIX) or not after.isdigit():
                raise FakeGitHubError(400, "Invalid cursor")
            newest_first = [a for a in newest_first if a.id < int(after)]
        chunk = newest_first[:per_page]
        headers: dict[str, str] = {}
        if len(newest_first) > per_page:
            query = MultiDict(incoming.query)
            query["cursor"] = f"{CURSOR_PREFIX}{chunk[-1].id}"
            path = incoming.request.rel_url.raw_path
            headers["Link"] = (
                f'<{self.fake.origin}{path}?{urlencode(list(query.items()))}>; rel="next"'
            )
        return Reply(200, [self._json(a) for a in chunk], headers)

    async def _redeliver(self, incoming: Incoming) -> Reply:
        delivery_id = int(incoming.params["delivery_id"])
        original = next((a for a in self.attempts if a.id == delivery_id), None)
        if original is None:
            raise FakeGitHubError(404, "Not Found")
        self.redelivery_requests.append(delivery_id)
        status = await self._send(original)
        if not self.log_redeliveries:
            return Reply(202, {})
        self._next_id += 1
        self.attempts.append(
            replace(
                original,
                id=self._next_id,
                delivered_at=self.fake.clock(),
                status_code=status,
                redelivery=True,
            )
        )
        return Reply(202, {})

    async def _send(self, attempt: Attempt) -> int:
        """POST the event's payload to `deliver_to` as GitHub signs it; the answer's status,
        0 when nothing answered (GitHub's "failed to connect")."""
        body = self.payloads.get(attempt.guid)
        if self.deliver_to is None or body is None:
            return 0
        signature = hmac.new(self.deliver_to.secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": attempt.event,
            "X-GitHub-Delivery": attempt.guid,
            "X-Hub-Signature-256": f"sha256={signature}",
            "User-Agent": "GitHub-Hookshot/fake",
        }
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(self.deliver_to.url, data=body, headers=headers) as response,
            ):
                await response.read()
                return response.status
        except aiohttp.ClientConnectionError:
            return 0
        finally:
            self.delivered.set()
