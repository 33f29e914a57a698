"""CI on the head commit, as judging reads it. Pure.

* **What the judges see** (`for_judges`): every check run and commit status on the head
  commit except the App's own `judge` run, with a short excerpt of its output (secrets
  redacted), as they stood when judging started.
* **When judging waits** (`wait_for_ci`): CI that ended in an infrastructure failure or a
  timeout (a check run `timed_out`, `cancelled` or `startup_failure`, a status `error`)
  says nothing about the change, so seed 002 skips such runs, but only for checks that
  matter (`matters`: required for the pull request, or a check run of a CI app named in
  the repository's `ci.wait_for`): an author can post an `error` status of their own or
  cancel their own workflow run. The `judge` run says it waits, naming the checks, and
  the sha remembers which checks it waits for (`awaited_keys`). A wait is never a pass:
  neutral in advisory mode, `action_required` in blocking mode (bot/judging/conclusion.py).
  A maintainer's `/judge rerun` judges at once, whatever CI says.
* **When a wait ends** (`ci_event`, `rerun_finished`): a check run of an awaited name
  completes, a check suite of an awaited app completes, or a status of an awaited
  context settles, with anything but another infrastructure failure. The sha is then
  judged again (once: bot/judging/state.py `claim_ci_rerun`), and waits again if some
  other awaited check still failed that way.
* **What the `judge` run's summary says** (`summary_lines`): the red required checks (on
  a push, where nothing is known to be required, the red ones).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.credentials import redact
from bot.gfm import code, plural
from bot.github.types import CiCheck
from bot.judge.engine.review_context import FAILING_STATES, CiResult
from bot.judging.check_run import CHECK_NAME, CheckRunOutput
from bot.judging.run_notices import render_waiting_for_ci
from bot.judging.target import Target

INFRA_CONCLUSIONS = frozenset({"timed_out", "cancelled", "startup_failure"})
RED_STATES = FAILING_STATES - INFRA_CONCLUSIONS - {"error"}
# Characters of a check's excerpt a `CiResult` carries to the judges; the prompt cuts further.
CI_RESULT_EXCERPT_LIMIT = 1000
SUMMARY_LISTED = 10
EXPLICIT_TRIGGER = "command."
"""Triggers that judge despite CI: a person asked for it (`/judge rerun`, Re-run)."""


@dataclass(frozen=True)
class WaitForCi:
    """The run ends without judging until CI reruns."""

    output: CheckRunOutput
    awaiting: tuple[str, ...]


def others(checks: Sequence[CiCheck], app_id: str | None) -> list[CiCheck]:
    """Every result but the App's own `judge` run."""

    def ours(check: CiCheck) -> bool:
        if check.kind != "check" or check.name != CHECK_NAME:
            return False
        return app_id is None or check.app_id is None or str(check.app_id) == str(app_id)

    return [check for check in checks if not ours(check)]


def infra_failure(check: CiCheck) -> bool:
    if check.kind == "status":
        return check.state == "error"
    return check.state in INFRA_CONCLUSIONS


def awaited_keys(failures: Sequence[CiCheck]) -> tuple[str, ...]:
    keys: list[str] = []
    for check in failures:
        if check.kind == "status":
            keys.append(f"status:{check.name}")
            continue
        keys.append(f"check:{check.name}")
        if check.app_slug:
            keys.append(f"app:{check.app_slug}")
    return tuple(dict.fromkeys(keys))


def matters(check: CiCheck, wait_for: Collection[str]) -> bool:
    """A check judging may wait for: required for the pull request, or a check run of a
    CI app the repository names. Anyone with write access can post a commit status or
    cancel their own workflow run; such a result must not hold the judges."""
    if check.required:
        return True
    slug = (check.app_slug or "").lower()
    return check.kind != "status" and bool(slug) and slug in {a.lower() for a in wait_for}


def wait_for_ci(
    checks: Sequence[CiCheck], target: Target, wait_for: Collection[str] = ()
) -> WaitForCi | None:
    """Whether judging waits for CI to rerun (see the module docstring)."""
    if target.trigger.startswith(EXPLICIT_TRIGGER):
        return None
    failures = [check for check in checks if infra_failure(check) and matters(check, wait_for)]
    if not failures:
        return None
    named = [(check.name, check.state) for check in failures]
    return WaitForCi(render_waiting_for_ci(named), awaited_keys(failures))


def for_judges(checks: Sequence[CiCheck]) -> list[CiResult]:
    return [
        CiResult(
            name=check.name,
            state=check.state,
            required=check.required,
            excerpt=redact(check.excerpt[:CI_RESULT_EXCERPT_LIMIT]),
        )
        for check in checks
    ]


def summary_lines(checks: Sequence[CiCheck]) -> list[str]:
    """Markdown lines for the run's summary: the red required checks (any red one when
    nothing is known to be required)."""
    red = [c for c in checks if c.state in RED_STATES]
    known = any(c.required is not None for c in checks)
    shown = [c for c in red if c.required] if known else red
    if not shown:
        return []
    what = "required check" if known else "check"
    names = ", ".join(f"{code(c.name, 80)} ({c.state})" for c in shown[:SUMMARY_LISTED])
    more = len(shown) - SUMMARY_LISTED
    tail = f" and {more} more" if more > 0 else ""
    return [
        f"CI: {plural(len(shown), 'red ' + what)} on this commit: {names}{tail}. "
        "The judges saw its results."
    ]


# -- the end of a wait --------------------------------------------------------------------


@dataclass(frozen=True)
class CiEvent:
    """A CI result arriving by webhook: what finished, on which commit, how."""

    kind: str  # check_run | check_suite | status
    head_sha: str
    name: str
    state: str
    app_id: int | None = None
    app_slug: str | None = None


def ci_event(event: str, payload: Mapping[str, Any]) -> CiEvent | None:
    """The finished CI result a webhook reports, or None when it reports none."""
    if event == "status":
        sha, state = payload.get("sha"), payload.get("state")
        name = payload.get("context")
        if not (isinstance(sha, str) and isinstance(state, str) and isinstance(name, str)):
            return None
        return CiEvent("status", sha, name, state)
    item = payload.get(event)
    if event not in ("check_run", "check_suite") or not isinstance(item, Mapping):
        return None
    app = item.get("app")
    app = app if isinstance(app, Mapping) else {}
    app_id = app.get("id")
    return CiEvent(
        kind=event,
        head_sha=str(item.get("head_sha") or ""),
        name=str(item.get("name") or ""),
        state=str(item.get("conclusion") or "pending"),
        app_id=app_id if isinstance(app_id, int) else None,
        app_slug=str(app.get("slug") or "") or None,
    )


def rerun_finished(awaiting: Sequence[str], event: CiEvent, app_id: str | None) -> bool:
    """Whether this result ends the sha's wait for CI (module docstring)."""
    if not awaiting or not event.head_sha:
        return False
    if app_id is not None and event.app_id is not None and str(event.app_id) == str(app_id):
        return False
    if event.state in ("pending", "expected", "error") or event.state in INFRA_CONCLUSIONS:
        return False
    key = {
        "check_run": f"check:{event.name}",
        "check_suite": f"app:{event.app_slug}",
        "status": f"status:{event.name}",
    }[event.kind]
    return key in awaiting
