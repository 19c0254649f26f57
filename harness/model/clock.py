"""The pinned clock: 2026-06-01 09:00:00 UTC (a Monday), one second later at every read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

PINNED_START = datetime(2026, 6, 1, 9, 0, 0, tzinfo=UTC)


class PinnedClock:
    def __init__(self, start: datetime = PINNED_START) -> None:
        self._next = start

    def now(self) -> datetime:
        """The current instant; each read advances the clock by one second."""
        current = self._next
        self._next = current + timedelta(seconds=1)
        return current

    def peek(self) -> datetime:
        """The instant the next read returns, without advancing."""
        return self._next


def iso(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def human(instant: datetime) -> str:
    return instant.strftime("%A %Y-%m-%d %H:%M:%S UTC")
