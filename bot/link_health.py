"""What this process last saw of something it depends on (GitHub, writes to storage), for
the status page and `/healthz?detail=1`: a success clears a failure, and `failing_since`
is the first failure since the last success, the age of the outage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass
class LinkHealth:
    host: str = ""
    last_success: datetime | None = None
    failing_since: datetime | None = None
    last_failure: datetime | None = None
    last_error: str | None = None

    @property
    def failing(self) -> bool:
        return self.failing_since is not None

    def succeeded(self, now: datetime) -> None:
        self.last_success = now
        self.failing_since = None

    def failed(self, now: datetime, error: str) -> datetime:
        """Records a failure; returns since when the link has been failing."""
        if self.failing_since is None:
            self.failing_since = now
        self.last_failure = now
        self.last_error = error
        return self.failing_since

    def state(self) -> str:
        if self.failing:
            return "failing"
        return "ok" if self.last_success is not None else "not contacted yet"

    def detail(self) -> dict[str, str | bool | None]:
        """As `/healthz?detail=1` shows it: times in ISO 8601, None for never."""

        def iso(moment: datetime | None) -> str | None:
            return None if moment is None else moment.isoformat()

        return {
            "host": self.host,
            "state": self.state(),
            "failing": self.failing,
            "last_success": iso(self.last_success),
            "failing_since": iso(self.failing_since),
            "last_failure": iso(self.last_failure),
            "last_error": self.last_error,
        }
