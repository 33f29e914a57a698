"""When judgments failing for want of a provider become an outage worth a message.

Pure: the caller keeps the `OutageState` (in storage, so replicas share it) and acts on
the returned decision. One message per outage: the count restarts only after a judgment
the providers answered.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OutageState", "observe"]


@dataclass(frozen=True)
class OutageState:
    consecutive_failures: int = 0
    reported: bool = False

    def as_json(self) -> dict[str, object]:
        return {"consecutive_failures": self.consecutive_failures, "reported": self.reported}

    @classmethod
    def from_json(cls, data: dict[str, object] | None) -> OutageState:
        if not data:
            return cls()
        failures = data.get("consecutive_failures", 0)
        return cls(
            consecutive_failures=failures if isinstance(failures, int) else 0,
            reported=data.get("reported") is True,
        )


def observe(
    state: OutageState, *, provider_failed: bool, threshold: int
) -> tuple[OutageState, bool]:
    """The next state after one judgment, and whether to report an outage now."""
    if not provider_failed:
        return OutageState(), False
    failures = state.consecutive_failures + 1
    report = failures >= threshold and not state.reported
    return OutageState(failures, state.reported or report), report
