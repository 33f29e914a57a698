"""What a merged pull request cost, on `/metrics`: its time in the queue, the CI runs and
the model calls it took (`judge_merge_queue_*`).

Counted when GitHub says the pull request was merged (`pull_request` closed), once per
delivery, in the process that handled it (sum over replicas). The costs come from the
pull request's verdict records (`Storage.list_verdicts` of its task):

    CI runs      the heads it had that the App judged: each new head (a push, the queue's
                 update-branch) runs the repository's CI once, and the App judges every
                 head of a pull request it watches
    model calls  the model calls of those judgments (a verdict-cache answer makes none)
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from bot.intake.dispatch import Context
from bot.judging.target import task_ref
from bot.storage.base import StoredVerdict


def costs(records: Iterable[StoredVerdict]) -> tuple[int, int]:
    """(CI runs, model calls) of a pull request's verdict records. Pure."""
    heads: set[str] = set()
    calls = 0
    for stored in records:
        if stored.head_sha:
            heads.add(stored.head_sha)
        listed = stored.record.get("calls")
        calls += len(listed) if isinstance(listed, list) else 0
    return len(heads), calls


async def observe_merge(
    context: Context, repository: str, number: int, queue: str, entered_at: datetime
) -> None:
    if not context.hub.ready:
        return  # a hub without services (a handler run on its own) has no registry
    metrics = context.services.metrics
    metrics.merge_queue_merges.labels(queue=queue).inc()
    waited = max((context.clock() - entered_at).total_seconds(), 0.0)
    metrics.merge_queue_seconds.labels(queue=queue).observe(waited)
    records = await context.storage.list_verdicts(task_id=task_ref(repository, pull_number=number))
    ci_runs, model_calls = costs(records)
    metrics.merge_queue_ci_runs.observe(ci_runs)
    metrics.merge_queue_model_calls.observe(model_calls)
