"""Queue branches: where a batch is built and tested, and how the base learns of it.

    branch_name(base, n)      `judge-bot/queue/<base>/<n>` (the repository's CI must run on
                              `judge-bot/queue/**`: the one line a workflow needs)
    BaseFacts.of(branch)      the base's head and what its protection says (`GET .../branches`):
                              required checks, up-to-date heads (strict), required reviews,
                              push restrictions; `way` is the `LandWay` it allows
    QueueBranchCalls
      build(base, n, on, members)   merge each member's judged head, in order, on a scratch
                                    branch (`judge-bot/queue-build/<base>/<n>`) made at
                                    `on` (`POST .../merges`), then create the queue branch
                                    at the result: CI sees only the finished batch; a
                                    conflict names the member
      move_base(base, tip)          fast-forward the base to the tested tip
                                    (`PATCH .../git/refs/heads/<base>`, never forced)
      checks_on(sha)                the tip's check runs and statuses (`batch_checks`)
      delete(base, n)               the branch goes when its batch lands or is discarded

Only GitHub's answers are decided here (a conflict, a refused move); the planner
(`batching`) decides what to build and land.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import BadRequest

from bot.judging.target import QUEUE_BRANCH_PREFIX, QUEUE_BUILD_PREFIX
from bot.merging.batching import LandWay, land_way
from bot.merging.github_calls import Answer, MergeCalls


def _said(exc: BadRequest) -> str:
    """GitHub's message, or the status's phrase when it gave none."""
    text = str(exc)
    return text if text and text != str(int(exc.status_code)) else exc.status_code.phrase


def branch_name(base: str, number: int) -> str:
    return f"{QUEUE_BRANCH_PREFIX}{base}/{number}"


def build_name(base: str, number: int) -> str:
    """Where a batch is put together before its queue branch exists."""
    return f"{QUEUE_BUILD_PREFIX}{base}/{number}"


@dataclass(frozen=True)
class BaseFacts:
    """The base branch as `GET .../branches/{branch}` shows it to the App."""

    head: str
    required_checks: tuple[str, ...]
    strict: bool
    reviews_required: bool
    restricted: bool

    @classmethod
    def of(cls, branch: Mapping[str, Any]) -> BaseFacts:
        protection = branch.get("protection") or {}
        checks = protection.get("required_status_checks") or {}
        enforced = checks.get("enforcement_level", "everyone") != "off"
        names = [str(name) for name in checks.get("contexts") or ()]
        names += [str(check.get("context")) for check in checks.get("checks") or ()]
        return cls(
            head=str((branch.get("commit") or {}).get("sha") or ""),
            required_checks=tuple(dict.fromkeys(names)) if enforced else (),
            strict=enforced and bool(checks.get("strict")),
            reviews_required=bool(protection.get("required_pull_request_reviews")),
            restricted=bool(protection.get("restrictions")),
        )

    @property
    def way(self) -> LandWay:
        """Moving the base needs a push no review rule or push restriction stops; the
        App's push carries a commit whose required checks passed on the queue branch."""
        may_move = not (self.reviews_required or self.restricted)
        return land_way(strict=self.strict, may_move_base=may_move)


@dataclass(frozen=True)
class Built:
    """The batch's tested commit (its queue branch's head)."""

    tip: str


@dataclass(frozen=True)
class Conflict:
    """Merging `number`'s judged head into the batch conflicts (GitHub's 409)."""

    number: int
    message: str


class QueueBranchCalls(MergeCalls):
    """The merge-queue calls plus the queue branches' own."""

    async def base_facts(self, base: str) -> BaseFacts:
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/branches/{branch}", self._vars(branch=base)
        )
        return BaseFacts.of(dict(answer))

    async def default_branch(self) -> str:
        answer = await self.client.getitem("/repos/{owner}/{repo}", self._vars())
        return str(answer.get("default_branch") or "main")

    async def _create(self, name: str, sha: str) -> Answer:
        try:
            await self.client.post(
                "/repos/{owner}/{repo}/git/refs",
                self._vars(),
                data={"ref": f"refs/heads/{name}", "sha": sha},
            )
        except BadRequest as exc:
            if int(exc.status_code) != 422:
                raise
            return Answer(422, _said(exc))
        return Answer(201)

    async def move(self, name: str, sha: str, *, force: bool) -> Answer:
        """`PATCH .../git/refs/heads/<name>`; a refusal (422: not a fast forward, a
        protected branch, a required check not passed) comes back as an `Answer`."""
        try:
            await self.client.patch(
                "/repos/{owner}/{repo}/git/refs/{ref}",
                self._vars(ref=f"heads/{name}"),
                data={"sha": sha, "force": force},
            )
        except BadRequest as exc:
            if int(exc.status_code) not in (409, 422):
                raise
            return Answer(int(exc.status_code), _said(exc))
        return Answer(200)

    async def _merge_into(self, name: str, head: str, message: str) -> str | Answer:
        """The merge commit's sha; the branch itself when it holds `head` already (204);
        GitHub's 409 (a conflict) as an `Answer`."""
        try:
            merged = await self.client.post(
                "/repos/{owner}/{repo}/merges",
                self._vars(),
                data={"base": name, "head": head, "commit_message": message},
            )
        except BadRequest as exc:
            if int(exc.status_code) != 409:
                raise
            return Answer(409, _said(exc))
        return str(merged["sha"]) if merged else ""

    async def _at(self, name: str, sha: str) -> None:
        """The branch at `sha`, created, or moved there when an earlier try (a crashed
        worker) left it."""
        created = await self._create(name, sha)
        if created.status == 422:
            moved = await self.move(name, sha, force=True)
            if moved.status != 200:
                raise RuntimeError(f"queue branch {name} could not be reset: {moved.message}")

    async def build(
        self, base: str, number: int, on: str, members: Sequence[tuple[int, str]]
    ) -> Built | Conflict:
        """The batch's branch at the commit of each (pull number, judged sha) merged in
        order on `on`. The merges are made on a scratch branch (`build_name`) and the
        queue branch is created at the last one only, so CI, which runs on queue
        branches, runs once per batch, never on a half-built one."""
        scratch = build_name(base, number)
        await self._at(scratch, on)
        tip = on
        for pull_number, sha in members:
            message = f"Merge #{pull_number} at its judged commit {sha[:7]} (judge-bot queue)"
            merged = await self._merge_into(scratch, sha, message)
            if isinstance(merged, Answer):
                await self.delete_branch(scratch)
                return Conflict(pull_number, merged.message)
            tip = merged or tip
        await self._at(branch_name(base, number), tip)
        await self.delete_branch(scratch)
        return Built(tip)

    async def move_base(self, base: str, tip: str) -> Answer:
        """Bring the base to the tested tip; only a fast forward (GitHub refuses one the
        base moved away from: the batch is then tested again)."""
        return await self.move(base, tip, force=False)

    async def checks_on(self, sha: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The commit's check runs (the newest hundred) and its combined status's
        statuses: what the branch protection's required checks are read from."""
        runs = await self.client.getitem(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs{?per_page}",
            self._vars(ref=sha, per_page=100),
        )
        combined = await self.client.getitem(
            "/repos/{owner}/{repo}/commits/{ref}/status{?per_page}",
            self._vars(ref=sha, per_page=100),
        )
        return list(runs.get("check_runs") or ()), list(combined.get("statuses") or ())

    async def delete(self, base: str, number: int, *, building: bool = False) -> Answer:
        """The queue branch goes; with `building`, the scratch branch of a batch left half
        built too."""
        if building:
            await self.delete_branch(build_name(base, number))
        return await self.delete_branch(branch_name(base, number))
