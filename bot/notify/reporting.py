"""Turning what the judging flow just did into notices: an escalation issue opened, and
judgments the providers failed (an outage once several come in a row).

The outage count is shared by replicas through storage (one key: the providers are the
installation-wide resource that fails); a lost update between two replicas at worst
delays the message by one judgment.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.judge.records import Verdict, VerdictRecord
from bot.notify.notices import Notice, NoticeKind
from bot.notify.outage import OutageState, observe
from bot.notify.sender import Notifier
from bot.storage.base import Storage

__all__ = ["escalation_notice", "note_judgment", "provider_failed"]

OUTAGE_NAMESPACE = "notify-outage"
OUTAGE_KEY = "providers"


def provider_failed(records: Sequence[VerdictRecord]) -> bool | None:
    """True when the judgment is undetermined because every model call failed; False
    when a provider answered; None when no model was called (nothing learned)."""
    calls = [call for record in records for call in record.calls]
    if not calls:
        return None
    if any(call.error is None for call in calls):
        return False
    return any(record.final_decision is Verdict.UNDETERMINED for record in records)


def escalation_notice(repository: str, number: int, url: str | None, head_sha: str) -> Notice:
    return Notice(
        NoticeKind.ESCALATION,
        key=f"escalation:{repository}#{number}",
        summary=f"The judges disagree or stay ambiguous on {head_sha[:12]}; "
        f"issue #{number} waits for a decision (/judge override accept|reject).",
        repository=repository,
        url=url,
        facts={"issue": str(number), "sha": head_sha},
    )


def _outage_notice(state: OutageState, records: Sequence[VerdictRecord]) -> Notice:
    errors = sorted({call.error for r in records for call in r.calls if call.error})
    models = sorted({f"{call.tier.value} {call.model}" for r in records for call in r.calls})
    return Notice(
        NoticeKind.PROVIDER_OUTAGE,
        # One message per outage: a new outage starts after a judgment that succeeded,
        # and its key differs by the first record's time.
        key=f"outage:{records[0].timestamp.isoformat()}",
        summary=f"{state.consecutive_failures} judgments in a row were left UNDETERMINED "
        f"because no judge model answered ({', '.join(errors)[:300]}). Checks stay neutral "
        "(fail open) until the providers answer again.",
        facts={"models": ", ".join(models)[:300]},
    )


async def load_outage(storage: Storage) -> OutageState:
    return OutageState.from_json(await storage.kv_get(OUTAGE_NAMESPACE, OUTAGE_KEY))


async def save_outage(storage: Storage, state: OutageState) -> None:
    await storage.kv_put(OUTAGE_NAMESPACE, OUTAGE_KEY, state.as_json())


async def note_judgment(
    notifier: Notifier | None,
    storage: Storage,
    records: Sequence[VerdictRecord],
) -> None:
    """Count a judgment toward (or out of) a provider outage; report one when due."""
    if notifier is None or not notifier.enabled or not records:
        return
    failed = provider_failed(records)
    if failed is None:
        return
    before = await load_outage(storage)
    after, report = observe(before, provider_failed=failed, threshold=notifier.outage_after)
    if after != before:
        await save_outage(storage, after)
    if report:
        notifier.post(_outage_notice(after, records))
