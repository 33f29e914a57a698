"""The sha's `judge` check run: claimed once, created once, completed once.

A push and a pull request for one head sha can arrive milliseconds apart, a worker can
be killed between GitHub creating a run and storage learning its id, and a delivery can
be retried after it completed the run. Each of these made a second run (or completed one
twice). So:

* **Claim** (`claim`): one delivery owns the sha at a time (`rules.claim_action`); a pull
  request's view takes a push's over.
* **Create**: the id of the sha's run lives in its own row, written once. Only the
  delivery holding the creation token creates the run, and first asks GitHub whether the
  App already made one for the sha (a crash after the create); anyone else waits for
  that row, and creates only when the creator is gone and GitHub has no run.
* **Ownership after waits**: creating may wait on the installation's write pacing; after
  it, ownership is checked again, and a delivery that lost the sha hands the run id to the
  state and drops its result (`Abandoned`).
* **Complete**: the state records which delivery completed the run; the same delivery's
  retry finds it done and stops (`already_completed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.github.gateway import RepoGateway
from bot.judge.records import VerdictRecord
from bot.judge.settings import Mode, OnOutage
from bot.judging import rules
from bot.judging.check_run import CHECK_NAME, CheckRunOutput, render_in_progress
from bot.judging.state import (
    ShaState,
    forget_state,
    load_state,
    put_state_if_absent,
    save_state,
)
from bot.judging.target import Target, people_of
from bot.storage.base import DeliveryStatus, Storage

RUN_NAMESPACE = "judged-sha-run"
CREATOR_NAMESPACE = "judged-sha-run-creator"
# How long a delivery waits for another one's run to appear before asking GitHub and, if
# the creator is gone, creating it itself; the installation's write pacing is the usual
# reason for the wait, about a second per queued write.
CREATOR_WAIT_SECONDS = 30.0
CREATOR_POLL_SECONDS = 0.1


class Abandoned(Exception):
    """Another delivery took this sha over while we were judging it."""


class RunRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    url: str = ""


async def claim(
    storage: Storage,
    key: str,
    target: Target,
    *,
    owner: str,
    explicit: bool,
    now: datetime | None = None,
) -> ShaState | None:
    """This delivery's state for the sha, or None when another delivery judges it. `now`
    becomes the sha's `first_seen_at` when no delivery claimed it before."""
    fresh = ShaState.fresh(owner, target, now)
    if await put_state_if_absent(storage, key, fresh):
        return fresh
    state = await load_state(storage, key)
    owner_failed = False
    if state is not None and state.owner not in (None, owner):
        previous = await storage.get_delivery(str(state.owner))
        owner_failed = previous is not None and previous.status is DeliveryStatus.FAILED
    action = rules.claim_action(
        state,
        owner=owner,
        incoming_is_pull=target.pull_number is not None,
        explicit=explicit,
        owner_failed=owner_failed,
    )
    if action is rules.ClaimAction.SKIP:
        return None
    update: dict[str, Any] = {"owner": owner, "target": target.to_json()}
    if action is rules.ClaimAction.TAKE_OVER:
        # The outcome being replaced stops counting now, not when the new one lands: a
        # push's accept (only its commits' files) or one judged against another base must
        # not approve the pull request meanwhile.
        update |= {"verdict": None, "conclusion": None, "records": (), "override": None}
    claimed = (state or fresh).model_copy(update=update)
    await save_state(storage, key, claimed)
    return claimed


def already_completed(state: ShaState, owner: str) -> bool:
    """This delivery completed the sha's run before (its retry after a crash)."""
    return state.completed_by == owner and state.check_run_id is not None


async def forget_sha(storage: Storage, key: str) -> None:
    """Everything judging remembers of a sha (its state, then its run and who created it),
    for a commit that is gone (a merge group that was not merged)."""
    await forget_state(storage, key)
    for namespace in (RUN_NAMESPACE, CREATOR_NAMESPACE):
        await storage.kv_delete(namespace, key)


async def load_run(storage: Storage, key: str) -> RunRow | None:
    raw = await storage.kv_get(RUN_NAMESPACE, key)
    return None if raw is None else RunRow.model_validate(raw)


async def put_run_if_absent(storage: Storage, key: str, run: RunRow) -> bool:
    """Whether `run` is now the sha's run: its row is written once."""
    return await storage.kv_put_if_absent(RUN_NAMESPACE, key, run.model_dump(mode="json"))


async def take_creation(storage: Storage, key: str, owner: str) -> str | None:
    """None when the token to create the sha's run was free and is `owner`'s now;
    otherwise the delivery holding it (`owner` itself on a retry; "" for a token
    forgotten meanwhile)."""
    if await storage.kv_put_if_absent(CREATOR_NAMESPACE, key, _creator_row(owner)):
        return None
    return _creator_of(await storage.kv_get(CREATOR_NAMESPACE, key))


def _creator_row(owner: str) -> dict[str, Any]:
    return {"owner": owner}


def _creator_of(row: Mapping[str, Any] | None) -> str:
    owner = (row or {}).get("owner")
    return owner if isinstance(owner, str) else ""


class RunHandle:
    """The sha's check run, written only while this delivery still owns the sha."""

    def __init__(
        self,
        gateway: RepoGateway,
        storage: Storage,
        key: str,
        state: ShaState,
        owner: str,
        *,
        app_id: str | None = None,
    ) -> None:
        self.gateway = gateway
        self.storage = storage
        self.key = key
        self.state = state
        self.owner = owner
        self.app_id = app_id

    @property
    def run_id(self) -> int | None:
        return self.state.check_run_id

    @property
    def url(self) -> str:
        return self.state.check_run_url

    async def _still_mine(self) -> None:
        current = await load_state(self.storage, self.key)
        if current is not None and current.owner != self.owner:
            raise Abandoned(self.key)

    async def start(self, target: Target) -> int:
        """Show the run in progress: reuse the sha's run, or create it once."""
        output = render_in_progress([])
        fields = {
            "status": "in_progress",
            "output": {"title": output.title, "summary": output.summary},
        }
        # A delivery that lost the sha must not write at all: its "in progress" could land
        # after the new owner's completion and leave the run looking unfinished.
        await self._still_mine()
        known = await self._known_run()
        if known is None:
            known = await self._create_once(target, fields)
        else:
            await self.gateway.update_check_run(known.id, fields)
        await self._adopt(known)
        return known.id

    async def _known_run(self) -> RunRow | None:
        if self.state.check_run_id is not None:
            return RunRow(id=self.state.check_run_id, url=self.state.check_run_url)
        return await load_run(self.storage, self.key)

    async def _create_once(self, target: Target, fields: Mapping[str, Any]) -> RunRow:
        found: RunRow | None = None
        holder = await take_creation(self.storage, self.key, self.owner)
        if holder is not None:
            if holder != self.owner:
                waited = await self._wait_for_run(holder)
                if waited is not None:
                    await self.gateway.update_check_run(waited.id, fields)
                    return waited
            # A creator before us (this delivery's earlier attempt, or one that is gone)
            # may have made the run without saving its id: ask GitHub. A fresh token
            # means nobody tried, so the usual path costs no request for it.
            found = await self._find_on_github(target)
        if found is not None:
            await self.gateway.update_check_run(found.id, fields)
        else:
            run_id, url = await self.gateway.create_check_run(
                {"name": CHECK_NAME, "head_sha": target.head_sha, **fields}
            )
            found = RunRow(id=run_id, url=url)
        if not await put_run_if_absent(self.storage, self.key, found):
            found = await load_run(self.storage, self.key) or found
        return found

    async def _wait_for_run(self, creator: str) -> RunRow | None:
        """The run another delivery is creating, once it has; None when that delivery is
        gone (failed, done, or its lease lapsed) or the wait ran out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CREATOR_WAIT_SECONDS
        while loop.time() < deadline:
            row = await load_run(self.storage, self.key)
            if row is not None:
                return row
            delivery = await self.storage.get_delivery(creator) if creator else None
            if delivery is None or delivery.status is not DeliveryStatus.PROCESSING:
                return await load_run(self.storage, self.key)
            await asyncio.sleep(CREATOR_POLL_SECONDS)
        return await load_run(self.storage, self.key)

    async def _find_on_github(self, target: Target) -> RunRow | None:
        """The App's own `judge` run on the sha, if GitHub has one (a create whose id was
        never saved: the worker died between the two)."""
        found = await self.gateway.find_check_run(target.head_sha, CHECK_NAME, self.app_id)
        return None if found is None else RunRow(id=found[0], url=found[1])

    async def _adopt(self, run: RunRow) -> None:
        """Remember the run on the sha's state; a delivery that lost the sha while waiting
        gives the id to the current owner and stops."""
        current = await load_state(self.storage, self.key)
        if current is not None and current.owner != self.owner:
            if current.check_run_id is None:
                await save_state(self.storage, self.key, current.with_run(run.id, run.url))
            raise Abandoned(self.key)
        if self.state.check_run_id != run.id:
            self.state = self.state.with_run(run.id, run.url)
            await save_state(self.storage, self.key, self.state)

    async def complete(
        self,
        output: CheckRunOutput,
        *,
        verdict: str,
        target: Target,
        mode: Mode | None = None,
        records: Sequence[VerdictRecord] = (),
        awaiting_ci: Sequence[str] = (),
        unread: Sequence[tuple[str, str]] = (),
        on_outage: OnOutage = OnOutage.PASS,
    ) -> None:
        """Show the final output and remember it; `awaiting_ci` names the checks a run
        skipped for CI waits for (bot/judging/ci_gate.py); `unread` the watched files no
        judge read, and `on_outage` the outage rule, so the run can be shown again."""
        await self._still_mine()
        run_id = self.run_id if self.run_id is not None else await self.start(target)
        self.state = await show(self.gateway, run_id, self.state, output)
        # Showing waits on the installation's write pacing; a delivery that took the sha
        # over meanwhile owns the state now and completes the run itself: saving ours
        # would hand the sha back to us and make it drop its result.
        await self._still_mine()
        self.state = self.state.model_copy(
            update={
                "target": target.to_json(),
                "verdict": verdict,
                "conclusion": output.conclusion,
                "mode": mode,
                "commit_people": tuple(people_of(target.commits or ())),
                "records": tuple(records),
                "override": None,
                "completed_by": self.owner,
                "awaiting_ci": tuple(awaiting_ci),
                "unread": tuple(unread),
                "on_outage": on_outage,
            }
        )
        await save_state(self.storage, self.key, self.state)


async def show(
    gateway: RepoGateway, run_id: int, state: ShaState, output: CheckRunOutput
) -> ShaState:
    """Update the run; annotations already on it are not sent again (GitHub appends the
    annotations of every update). Returns the state with the sent ones recorded."""
    fresh = rules.unsent(output.annotations, state.annotations_sent)
    for payload in replace(output, annotations=fresh).payloads():
        await gateway.update_check_run(run_id, payload)
    return state.with_sent([rules.annotation_key(a) for a in fresh])
