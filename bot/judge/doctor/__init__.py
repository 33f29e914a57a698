"""The doctor: does each configured judge answer, and how (`judge-bot doctor`, the status
page and `/healthz?detail=1`).

    report      what one probe found, per tier and alternate, as plain data (pure): the
                outcome of the call and the server's own message, the response format
                that worked, the context size, latency and tokens; the table, the JSON
                and the exit status made from it
    probe       the edge: one tiny judgment per seat through the engine's own seats,
                prompt and providers (bot/judge/engine/seating.py), and each endpoint's
                context size (bot/judge/providers/server_facts.py)
    background  the server's copy: a probe at start and then every
                JUDGE_PROBE_INTERVAL_SECONDS (on each replica), the latest report on a
                board the pages read, so no health check calls a model

The room sits above the engine and imports neither settings nor storage: the caller loads
the `JudgeSettings` and passes an httpx client in.
"""

from bot.judge.doctor.report import (
    DoctorReport,
    ProbeOutcome,
    SeatProbe,
)

__all__ = ["DoctorReport", "ProbeOutcome", "SeatProbe"]
