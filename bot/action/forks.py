"""A pull request whose workflow run gets no repository secrets, where the judges need a
key: a fork's (GitHub gives a fork's run no secrets) or one Dependabot started (its runs get
Dependabot's secrets only). Nobody can judge it there, and the run says so, concluded by the
App's table (`Cause.NO_KEYS`: neutral in advisory mode, `action_required` in blocking), with
what a maintainer can do. A panel that needs no key (local CLIs, a keyless server on the
runner or in a service container of the job) judges such pull requests like any other.

    withheld(payload)                   whose secrets GitHub withheld: a fork, Dependabot (pure)
    needs_keys(payload, judge_settings)   withheld, and a judge that needs a key has none (pure)
    render_no_keys(why)                 the run's words (pure)
    conclude_without_keys(...)          claims the sha and completes its `judge` run
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.records import Tier
from bot.judge.settings import Endpoint, JudgeSettings, Mode
from bot.judging.check_run import CheckRunOutput, finish_output
from bot.judging.conclusion import Cause
from bot.judging.flow import config_or_none
from bot.judging.repo_config import effective_mode
from bot.judging.run_handle import RunHandle, claim
from bot.judging.run_notices import concluded
from bot.judging.state import state_key
from bot.judging.target import Target

NOT_JUDGED = "not judged: the judges' keys are not available to forks"
NOT_JUDGED_DEPENDABOT = "not judged: the judges' keys are not available to Dependabot's runs"
DEPENDABOT = "dependabot[bot]"


class Withheld(StrEnum):
    """Why GitHub gave the run no repository secrets."""

    FORK = "fork"
    DEPENDABOT = "dependabot"


def is_fork_pull(payload: Mapping[str, Any]) -> bool:
    """Whether the event's pull request comes from another repository (a deleted fork's
    head names none)."""
    pull = payload.get("pull_request") or {}
    head = ((pull.get("head") or {}).get("repo") or {}).get("full_name")
    base = ((pull.get("base") or {}).get("repo") or {}).get("full_name")
    return not isinstance(head, str) or not isinstance(base, str) or head.lower() != base.lower()


def withheld(payload: Mapping[str, Any]) -> Withheld | None:
    """Whether (and why) GitHub withheld the repository's secrets from this run: a fork's
    pull request, or a run Dependabot started (the event's sender, GitHub's `actor`)."""
    if is_fork_pull(payload):
        return Withheld.FORK
    sender = str((payload.get("sender") or {}).get("login") or "")
    return Withheld.DEPENDABOT if sender.lower() == DEPENDABOT else None


def is_runners_own(base_url: str) -> bool:
    """Whether an endpoint is on the runner itself: loopback, `localhost`, or a job's
    service container (a name without a dot). Pure. A server elsewhere, even on a private
    network, may be a gateway that wants a key: a fork's run without one would only see
    it fail (an outage, which `JUDGE_ON_OUTAGE` may pass)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return "." not in host or host.endswith(".localhost")


def seat_needs_key(seat: Endpoint) -> bool:
    """A judge that cannot answer without the key it lacks: one with no key that is not
    a local CLI nor a server on the runner."""
    key = seat.api_key.get_secret_value() if seat.api_key is not None else ""
    return not seat.local and not key and not is_runners_own(seat.base_url)


def needs_keys(payload: Mapping[str, Any], judge_settings: JudgeSettings) -> Withheld | None:
    """Why this run cannot judge (its secrets withheld, and a judge needs a key it lacks),
    or None when it can."""
    why = withheld(payload)
    if why is None:
        return None
    seats = judge_settings.tiers()
    # A tier with a model but no endpoint is one whose key would have named it (the
    # provider's public endpoint): that key is what was withheld.
    named = [tier for tier in Tier if getattr(judge_settings, f"{tier.value}_model", None)]
    unseated = any(tier not in seats for tier in named)
    return why if unseated or any(map(seat_needs_key, seats.values())) else None


def render_no_keys(why: Withheld = Withheld.FORK) -> CheckRunOutput:
    if why is Withheld.DEPENDABOT:
        title = NOT_JUDGED_DEPENDABOT
        cause = (
            "Not judged: Dependabot started this run, and GitHub gives such runs only "
            "the repository's Dependabot secrets, so the judges' keys are not available "
            "to it. No code of the pull request was run.\n\n"
            "A maintainer can add the judges' keys as Dependabot secrets (Settings → "
            "Secrets and variables → Dependabot) so these runs judge, or "
        )
    else:
        title = NOT_JUDGED
        cause = (
            "Not judged: this pull request comes from a fork, and GitHub does not give a "
            "fork's workflow run the repository's secrets, so the judges' keys are not "
            "available to it. No code of the pull request was run.\n\n"
            "A maintainer can "
        )
    summary = cause + (
        "read the change and comment `/judge override accept` or "
        "`/judge override reject`, or comment `/judge rerun`: the comment workflow runs "
        "with the repository's secrets and judges the change through the API, without "
        "checking it out."
    )
    return finish_output(CheckRunOutput(conclusion="neutral", title=title, summary=summary))


async def no_keys_output(
    target: Target, context: Context, gateway: RepoGateway, why: Withheld
) -> tuple[CheckRunOutput, Mode]:
    """The run's output in the repository's mode (read from its default branch)."""
    config = await config_or_none(gateway, context, target.default_branch)
    mode = effective_mode(config, context.services.judge_settings.mode)
    return concluded(render_no_keys(why), Cause.NO_KEYS, mode), mode


async def conclude_without_keys(
    target: Target, context: Context, gateway: RepoGateway, output: CheckRunOutput, mode: Mode
) -> None:
    """Complete the sha's `judge` run with `output` (from `no_keys_output`)."""
    storage = context.storage
    owner = context.delivery.delivery_id
    key = state_key(target.repository, target.head_sha)
    state = await claim(storage, key, target, owner=owner, explicit=True, now=context.clock())
    assert state is not None, "an explicit claim always holds"
    run = RunHandle(gateway, storage, key, state, owner, app_id=context.services.github.app_id)
    await run.complete(output, verdict="skipped", target=target, mode=mode)
