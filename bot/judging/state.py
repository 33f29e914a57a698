"""What is remembered of one head sha: who judges it, its check run, the verdict shown.

One frozen model, loaded and saved only here. A `judge` check run exists once per sha,
and commands (`/judge override`, re-runs, buttons) act on what the last judgment left,
so every reader and writer goes through `ShaState`.

Rows written before the model had a `version` load as version 0 with the same fields;
a later change of shape bumps `STATE_VERSION` and converts older rows in `load_state`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.judge.records import Verdict, VerdictRecord
from bot.judge.settings import Mode, OnOutage
from bot.judging.target import Target
from bot.storage.base import Storage

STATE_NAMESPACE = "judged-sha"
GRANT_NAMESPACE = "skip-label-grant"
CI_RERUN_NAMESPACE = "judged-sha-ci-rerun"
STATE_VERSION = 1


def state_key(repository: str, head_sha: str) -> str:
    return f"{repository.lower()}@{head_sha}"


class Override(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    by: str


class ShaState(BaseModel):
    """`verdict` is a `Verdict` value, or `skipped` for a run that judged nothing."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = 0
    owner: str | None = None
    target: dict[str, Any] | None = None
    check_run_id: int | None = None
    check_run_url: str = ""
    annotations_sent: tuple[str, ...] = ()
    verdict: str | None = None
    conclusion: str | None = None
    mode: Mode | None = None
    commit_people: tuple[str, ...] = ()
    records: tuple[VerdictRecord, ...] = ()
    override: Override | None = None
    completed_by: str | None = None
    """The delivery that completed the run: its own retry stops there."""
    awaiting_ci: tuple[str, ...] = ()
    """The run was skipped until these checks rerun (bot/judging/ci_gate.py keys)."""
    unread: tuple[tuple[str, str], ...] = ()
    """Watched files no judge read in full, with why (path, reason): the run is no
    accept while any is listed, and an override cancelled later says so again."""
    on_outage: OnOutage = OnOutage.PASS
    """The repository's outage rule when the run was completed."""
    first_seen_at: datetime | None = None
    """When a delivery first claimed this sha: a command written before it cannot have
    been about this head (rows from before this field read None)."""

    @classmethod
    def fresh(cls, owner: str, target: Target, now: datetime | None = None) -> ShaState:
        return cls(version=STATE_VERSION, owner=owner, target=target.to_json(), first_seen_at=now)

    @property
    def claimed_by_push(self) -> bool:
        return (self.target or {}).get("pull_number") is None

    @property
    def judged(self) -> bool:
        """A verdict of the judges is on the run: something an override can replace."""
        return bool(self.records) and self.check_run_id is not None

    def judged_target(self, trigger: str) -> Target | None:
        return None if not self.target else Target.from_json(self.target, trigger)

    def with_run(self, run_id: int, url: str) -> ShaState:
        return self.model_copy(
            update={"check_run_id": run_id, "check_run_url": url, "annotations_sent": ()}
        )

    def with_sent(self, keys: Sequence[str]) -> ShaState:
        return self.model_copy(update={"annotations_sent": (*self.annotations_sent, *keys)})


class LabelGrant(BaseModel):
    """Who added a pull request's skip label, and their access then, as GitHub's `labeled`
    event said. In blocking mode the label skips the judge only when that person could
    have overridden the judges (`four_eyes`); a label nobody is known to have added
    (present when the pull request was opened) does not skip."""

    model_config = ConfigDict(frozen=True)

    by: str
    by_type: str = "User"
    permission: str = "none"
    role_name: str = ""
    head_sha: str = ""
    """The head the label was added at: it skips that commit only (rows from before
    this field read "" and skip nothing in blocking mode)."""


def grant_key(repository: str, pull_number: int) -> str:
    return f"{repository.lower()}#{pull_number}"


async def load_grant(storage: Storage, repository: str, pull_number: int) -> LabelGrant | None:
    raw = await storage.kv_get(GRANT_NAMESPACE, grant_key(repository, pull_number))
    return None if raw is None else LabelGrant.model_validate(raw)


async def save_grant(
    storage: Storage, repository: str, pull_number: int, grant: LabelGrant | None
) -> None:
    """Remember who added the label; None forgets it (the label was removed)."""
    key = grant_key(repository, pull_number)
    if grant is None:
        await storage.kv_delete(GRANT_NAMESPACE, key)
    else:
        await storage.kv_put(GRANT_NAMESPACE, key, grant.model_dump(mode="json"))


async def load_state(storage: Storage, key: str) -> ShaState | None:
    raw = await storage.kv_get(STATE_NAMESPACE, key)
    return None if raw is None else ShaState.model_validate(raw)


async def save_state(storage: Storage, key: str, state: ShaState) -> None:
    row = state.model_copy(update={"version": STATE_VERSION}).model_dump(mode="json")
    await storage.kv_put(STATE_NAMESPACE, key, row)


async def put_state_if_absent(storage: Storage, key: str, state: ShaState) -> bool:
    row = state.model_copy(update={"version": STATE_VERSION}).model_dump(mode="json")
    return await storage.kv_put_if_absent(STATE_NAMESPACE, key, row)


async def forget_state(storage: Storage, key: str) -> None:
    await storage.kv_delete(STATE_NAMESPACE, key)


async def claim_ci_rerun(storage: Storage, key: str, state: ShaState, owner: str) -> bool:
    """Whether this delivery judges a sha again now that its CI reran: the first of the
    webhooks that end one wait (a check run, its suite, a status) takes it; a retry of
    that delivery keeps it. A wait is named by the delivery that completed the skip, so
    a sha that waits again can be taken again."""
    token = f"{key}#{state.completed_by or ''}"
    if await storage.kv_put_if_absent(CI_RERUN_NAMESPACE, token, _taker_row(owner)):
        return True
    return _taker_of(await storage.kv_get(CI_RERUN_NAMESPACE, token)) == owner


def _taker_row(owner: str) -> dict[str, Any]:
    return {"owner": owner}


def _taker_of(row: Mapping[str, Any] | None) -> str | None:
    """The delivery that took a wait; None for a row gone meanwhile or naming none."""
    owner = (row or {}).get("owner")
    return owner if isinstance(owner, str) else None
