"""An engine's or a harness's logs, one per replica or worker, kept as one file of a cell."""

from __future__ import annotations

import re


def joined_logs(what: str, logs: list[str]) -> str:
    """One log as is; several (each replica's engine log, each worker's harness log), each under a
    `--- replica 2 of 3 ---` line."""
    if len(logs) == 1:
        return logs[0]
    return "\n".join(f"--- {what} {index} of {len(logs)} ---\n{log}" for index, log in enumerate(logs, start=1))


def split_logs(what: str, text: str) -> list[str]:
    """The logs `joined_logs` joined, each on its own (a log without those lines: itself alone)."""
    parts = re.split(rf"^--- {re.escape(what)} \d+ of \d+ ---$\n?", text, flags=re.MULTILINE)
    return parts[1:] if len(parts) > 1 else [text]
